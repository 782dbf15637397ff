/*
 * ckptd high availability on etcd: one pipeline, two daemons, two workers (one task each).
 * model/README.md maps every part to the C++ and explains the bounds; scripts/check-model.sh
 * runs it. Planted bugs (one model, switched by the preprocessor):
 *   -DBUG_UNFENCED                 etcd applies a write without comparing the leader revision
 *   -DBUG_TRIGGER_AFTER_DEADLINE   a leader triggers past its local lease deadline
 * Every property is an assertion, so pan runs with -DSAFETY; they are tagged (a)..(d) as in the
 * README.
 */

/* ---- bounds (each may be overridden with -D) --------------------------------------------- */
#ifndef MAXEP
#define MAXEP 3      /* leaderships etcd may grant (epochs 1..MAXEP) */
#endif
#ifndef MAXID
#define MAXID 4      /* checkpoint ids 1..MAXID may be triggered (at most 7: ids are bits) */
#endif
#ifndef BLOCK
#define BLOCK 2      /* ids per durable reservation */
#endif
#ifndef MAXCRASH
#define MAXCRASH 1   /* kill -9 of a leader */
#endif
#ifndef MAXPAUSE
#define MAXPAUSE 1   /* SIGSTOP of a leader past its local lease deadline */
#endif
#define CAP 2        /* messages in flight on one stream, each way's FIFO */

#define NONE 2       /* no daemon */

/* daemon roles */
#define STANDBY  0   /* campaigning; serves nothing */
#define TAKEOVER 1   /* won: loading and reserving ids, not serving yet */
#define LEADER   2   /* serving (it may be deposed without knowing it yet) */

/* the pipeline's round, as its leader sees it */
#define IDLE       0
#define PENDING    1 /* triggered, collecting acks */
#define COMPLETING 2 /* every task acked; the commit is with the store */

/* the one store write a daemon has in flight (GroupCommitStore: one batch at a time) */
#define W_NONE    0
#define W_RESERVE 1  /* raise the durable id counter to wv */
#define W_COMMIT  2  /* checkpoint wv completed */
#define R_NONE    0  /* no answer yet */
#define R_OK      1
#define R_FAIL    2  /* the compare failed: this daemon no longer leads */
#define R_UNKNOWN 3  /* no answer (deadline, connection lost): it may or may not have landed */

mtype = { WELCOME, TRIGGER, ABORT, COMPLETE };

/* ---- etcd ---------------------------------------------------------------------------------- */
byte ekey;            /* epoch (create revision) of the live leader key; 0: no leader key */
byte nep;             /* epochs handed out so far */
byte ectr;            /* durable id counter: the end of the reserved range */
byte edone;           /* last completed checkpoint id, as the last commit wrote it */
byte ehist;           /* bit i: checkpoint i is durably committed */
byte cep[MAXID + 1];  /* the leader epoch at the moment checkpoint i was committed */

/* ---- daemons (index 2 = NONE, so myep[NONE] == 0 matches no leader key) -------------------- */
byte role[2];
byte myep[3];         /* my leader key's create revision: the fence of all my writes */
bit  fresh[2];        /* the local lease deadline has not passed */
bit  paused[2];       /* SIGSTOP: takes no step at all */
byte nxt[2];          /* next id of the reserved block ... */
byte bend[2];         /* ... which ends here */
byte rid[2];          /* the pending round's id */
byte phase[2];
byte acks[2];         /* bit w: worker w acked rid */
byte ldone[2];        /* last completed id this daemon knows (told in welcome) */
byte sess[2];         /* bit w: worker w has a live stream (its task registered) here */
byte wk[2];           /* the write in flight: kind, value, epoch it is fenced by, answer */
byte wv[2];
byte we[2];
byte wr[2];
bit  worph[2];        /* its sender crashed: it may still land, nobody reads the answer */
byte ncrash, npause;

/* ---- workers ------------------------------------------------------------------------------- */
byte wconn[2];        /* the daemon its stream goes to; NONE: none */
byte wep[2];          /* highest leader epoch it has seen */
byte wround[2];       /* the round it holds a barrier for (0: none) ... */
byte wrep[2];         /* ... and that round's epoch */
bit  wacked[2];
byte wmax[2];         /* highest id it was told is complete (complete or welcome) */

/* streams: daemon d -> worker w is d2w[2*d+w]; worker w -> daemon d is w2d[2*w+d] */
chan d2w[4] = [CAP] of { mtype, byte, byte };  /* kind, id (welcome: last completed), epoch */
chan w2d[4] = [1] of { byte };                   /* ack of checkpoint id */

/* ---- ghost state for the properties -------------------------------------------------------- */
byte trig;            /* bit i: id i was triggered by some daemon, ever */

/* ---- switches ------------------------------------------------------------------------------ */
#ifdef BUG_UNFENCED
#define FENCE(d) (1)
#else
#define FENCE(d) (we[d] == ekey)       /* Txn compare: CreateRevision(leader key) == mine */
#endif
#ifdef BUG_TRIGGER_AFTER_DEADLINE
#define TRIGGER_GATE(d) (1)
#else
#define TRIGGER_GATE(d) (fresh[d])
#endif

#define ROOM(d) (len(d2w[2*(d)]) < CAP && len(d2w[2*(d)+1]) < CAP)
#define ME(d) (1 << (d))

/* (d) a deposed leader talks to no worker: whatever a daemon sends, it sends while etcd still
   holds its leader key. This is what the local deadline (earlier than etcd's expiry) buys. */
#define SENDING(d) assert(ekey == myep[d])

inline send_sessions(d, kind, id) {
  SENDING(d);
  if :: sess[d] & 1 -> d2w[2*d] ! kind, id, myep[d] :: else -> skip fi;
  if :: sess[d] & 2 -> d2w[2*d+1] ! kind, id, myep[d] :: else -> skip fi
}

/* Streams end (crash, exit, or a message withheld past the deadline): the tasks are lost, which
   aborts a round that is not with the store yet. Workers see the end and reconnect. */
inline end_sessions(d) {
  sess[d] = 0;
  if :: wconn[0] == d -> wconn[0] = NONE :: else -> skip fi;
  if :: wconn[1] == d -> wconn[1] = NONE :: else -> skip fi;
  if :: phase[d] == PENDING -> phase[d] = IDLE; acks[d] = 0 :: else -> skip fi
}

/* Past the local deadline nothing goes to workers. A message withheld would leave the worker
   out of step with the round (a barrier never completed or aborted), so its stream is ended
   instead: the next welcome, from whoever leads, puts the worker back in step. */
inline withhold(d) {
  end_sessions(d)
}

inline clear_write(d) {
  wk[d] = W_NONE; wv[d] = 0; we[d] = 0; wr[d] = R_NONE; worph[d] = 0
}

/* kill -9, or the fail-stop exit on a failed compare / unknown outcome / lost lease; systemd
   starts the daemon again as a standby with nothing in memory. */
inline restart(d) {
  end_sessions(d);
  role[d] = STANDBY; myep[d] = 0; fresh[d] = 0; paused[d] = 0;
  nxt[d] = 0; bend[d] = 0; rid[d] = 0; phase[d] = IDLE; acks[d] = 0; ldone[d] = 0;
  if
  :: wk[d] != W_NONE && wr[d] == R_NONE -> worph[d] = 1  /* already on the wire */
  :: else -> clear_write(d)
  fi;
  /* its sockets are closed: acks it had not read are gone */
  do :: nempty(w2d[d]) -> w2d[d] ? _ :: empty(w2d[d]) -> break od;
  do :: nempty(w2d[2+d]) -> w2d[2+d] ? _ :: empty(w2d[2+d]) -> break od;
  skip  /* keeps the loop's exit inside an enclosing d_step */
}

/* An ack from worker w, on its stream to d. */
inline on_ack(d, w, id) {
  if
  :: role[d] == LEADER && phase[d] == PENDING && rid[d] == id && (sess[d] & ME(w)) ->
     acks[d] = acks[d] | ME(w);
     if
     :: acks[d] == 3 && fresh[d] ->
        /* CommitCheckpoint: the round is with the store; nothing aborts it now */
        assert(wk[d] == W_NONE);
        phase[d] = COMPLETING; wk[d] = W_COMMIT; wv[d] = id; we[d] = myep[d]; wr[d] = R_NONE
     :: acks[d] == 3 && !fresh[d] ->
        /* EtcdBackend writes nothing while the lease is unconfirmed (kNotWritten): the round
           fails, and its abort is withheld */
        phase[d] = IDLE; acks[d] = 0; withhold(d)
     :: else -> skip
     fi
  :: else -> skip  /* not the pending round, or not a registered task: ignored */
  fi
}

/* etcd applies daemon d's write (the compare already passed, or was skipped). */
inline etcd_apply(d) {
  assert(we[d] == ekey);  /* (d) etcd never applies a write of a deposed leader */
  if
  :: wk[d] == W_RESERVE -> ectr = wv[d]
  :: wk[d] == W_COMMIT ->
     edone = wv[d]; ehist = ehist | (1 << wv[d]); cep[wv[d]] = ekey
  fi
}

proctype daemon(byte d) {
  byte a;
end:
  do
  /* -- EtcdElection ------------------------------------------------------------------------ */
  :: d_step { role[d] == STANDBY && ekey == 0 && nep < MAXEP ->
       /* campaign: the leader key, on a fresh lease; its create revision is my epoch */
       nep++; ekey = nep; myep[d] = nep; fresh[d] = 1; role[d] = TAKEOVER }
  :: d_step { role[d] != STANDBY && !paused[d] && !fresh[d] && ekey == myep[d] ->
       fresh[d] = 1 }  /* a keepalive answered while the lease lives: the deadline moves on */
  :: d_step { role[d] != STANDBY && !paused[d] && ekey != myep[d] ->
       restart(d) }    /* on_lost: the lease or the key is gone; exit, never step down */
  :: d_step { role[d] != STANDBY && !paused[d] && npause < MAXPAUSE ->
       npause++; paused[d] = 1; fresh[d] = 0 }  /* SIGSTOP for longer than the local deadline */
  :: d_step { paused[d] -> paused[d] = 0 }      /* SIGCONT: it still believes it leads */
  :: d_step { role[d] != STANDBY && ncrash < MAXCRASH -> ncrash++; restart(d) }  /* kill -9 */

  /* -- takeover: load at a revision after my leadership's, reserve a fresh block ----------- */
  /* (the write slot may still hold my previous life's orphan: wait until etcd has taken it) */
  :: d_step { role[d] == TAKEOVER && !paused[d] && fresh[d] && wk[d] == W_NONE ->
       ldone[d] = edone;
       wk[d] = W_RESERVE; wv[d] = ectr + BLOCK; we[d] = myep[d]; wr[d] = R_NONE }

  /* -- store answers (GroupCommitStore over EtcdBackend) ------------------------------------ */
  :: d_step { !paused[d] && !worph[d] && wk[d] == W_RESERVE && wr[d] == R_OK ->
       nxt[d] = wv[d] - BLOCK + 1; bend[d] = wv[d]; clear_write(d);
       role[d] = LEADER }  /* at takeover: only now does it serve */
  :: d_step { !paused[d] && !worph[d] && wk[d] == W_COMMIT && wr[d] == R_OK &&
              (!fresh[d] || ROOM(d)) ->
       /* durable: only now may workers hear `complete` */
       ldone[d] = wv[d]; phase[d] = IDLE; rid[d] = 0; acks[d] = 0;
       if
       :: fresh[d] -> send_sessions(d, COMPLETE, wv[d])
       :: else -> withhold(d)  /* the next welcome announces it */
       fi;
       clear_write(d) }
  :: d_step { !paused[d] && !worph[d] && (wr[d] == R_FAIL || wr[d] == R_UNKNOWN) ->
       restart(d) }  /* kStop: fail-stop, exit non-zero */

  /* -- PipelineCoordinator ------------------------------------------------------------------ */
  :: d_step { role[d] == LEADER && !paused[d] && fresh[d] && phase[d] == IDLE &&
              nxt[d] > bend[d] && bend[d] < MAXID && wk[d] == W_NONE ->
       /* the block is used up: reserve the next one (the trigger waits for it) */
       wk[d] = W_RESERVE; wv[d] = bend[d] + BLOCK; we[d] = myep[d]; wr[d] = R_NONE }
  :: d_step { role[d] == LEADER && !paused[d] && TRIGGER_GATE(d) && phase[d] == IDLE &&
              nxt[d] <= bend[d] && nxt[d] <= MAXID && sess[d] == 3 && ROOM(d) ->
       /* (a) ids are never reused: no id is triggered twice, by anyone */
       assert((trig & (1 << nxt[d])) == 0);
       trig = trig | (1 << nxt[d]);
       rid[d] = nxt[d]; nxt[d]++; phase[d] = PENDING; acks[d] = 0;
       send_sessions(d, TRIGGER, rid[d]) }
  :: d_step { role[d] == LEADER && !paused[d] && phase[d] == PENDING &&
              (!fresh[d] || ROOM(d)) ->
       /* timeout (or a decline): the round fails */
       phase[d] = IDLE; acks[d] = 0;
       if
       :: fresh[d] -> send_sessions(d, ABORT, rid[d])
       :: else -> withhold(d)
       fi }
  :: d_step { nempty(w2d[d]) && !paused[d] -> w2d[d] ? a; on_ack(d, 0, a); a = 0 }
  :: d_step { nempty(w2d[2+d]) && !paused[d] -> w2d[2+d] ? a; on_ack(d, 1, a); a = 0 }

  /* -- sessions: a hello (with takeover of its own task) gets a welcome --------------------- */
  :: d_step { role[d] == LEADER && !paused[d] && fresh[d] && wconn[0] == d &&
              (sess[d] & 1) == 0 && len(d2w[2*d]) < CAP ->
       SENDING(d); sess[d] = sess[d] | 1; d2w[2*d] ! WELCOME, ldone[d], myep[d] }
  :: d_step { role[d] == LEADER && !paused[d] && fresh[d] && wconn[1] == d &&
              (sess[d] & 2) == 0 && len(d2w[2*d+1]) < CAP ->
       SENDING(d); sess[d] = sess[d] | 2; d2w[2*d+1] ! WELCOME, ldone[d], myep[d] }
  od
}

proctype etcd() {
end:
  do
  /* the leader's lease expires only once its holder has stopped renewing: crashed, or past its
     local deadline (which comes first: timed from the keepalive's send, less a margin) */
  :: d_step { ekey != 0 && !(myep[0] == ekey && fresh[0]) && !(myep[1] == ekey && fresh[1]) ->
       ekey = 0 }
  /* a write arrives and is answered: applied if the compare holds, else refused */
  :: d_step { wk[0] != W_NONE && wr[0] == R_NONE ->
       if :: FENCE(0) -> etcd_apply(0); wr[0] = R_OK :: else -> wr[0] = R_FAIL fi;
       if :: worph[0] -> clear_write(0) :: else -> skip fi }
  :: d_step { wk[1] != W_NONE && wr[1] == R_NONE ->
       if :: FENCE(1) -> etcd_apply(1); wr[1] = R_OK :: else -> wr[1] = R_FAIL fi;
       if :: worph[1] -> clear_write(1) :: else -> skip fi }
  /* applied, but the answer is lost: the outcome is unknown to the daemon */
  :: d_step { wk[0] != W_NONE && wr[0] == R_NONE && !worph[0] && FENCE(0) ->
       etcd_apply(0); wr[0] = R_UNKNOWN }
  :: d_step { wk[1] != W_NONE && wr[1] == R_NONE && !worph[1] && FENCE(1) ->
       etcd_apply(1); wr[1] = R_UNKNOWN }
  /* lost before etcd saw it: unknown too */
  :: d_step { wk[0] != W_NONE && wr[0] == R_NONE ->
       if :: worph[0] -> clear_write(0) :: else -> wr[0] = R_UNKNOWN fi }
  :: d_step { wk[1] != W_NONE && wr[1] == R_NONE ->
       if :: worph[1] -> clear_write(1) :: else -> wr[1] = R_UNKNOWN fi }
  od
}

/* A message from daemon d's stream. Welcome and trigger carry leader_epoch on the wire; abort
   and complete come on a stream whose welcome named its epoch, so the SDK knows it too. */
inline deliver(w, d) {
  d2w[2*d+w] ? k, a, e;
  if
  :: e < wep[w] -> skip  /* SDK: a message of an epoch lower than one seen is ignored */
  :: else ->
     assert(e >= wep[w]);  /* (d) so nothing of a lower epoch is applied */
     wep[w] = e;
     if
     :: k == WELCOME ->
        /* (b) a completion notice never goes back on a `complete` the worker heard */
        assert(a >= wmax[w] && (a == 0 || (ehist & (1 << a))));
        wmax[w] = a; wround[w] = 0; wrep[w] = 0; wacked[w] = 0  /* a new stream: in step */
     :: k == TRIGGER ->
        /* (c) at most one pending round: no barrier of this epoch still open */
        assert(wround[w] == 0 || wrep[w] != e);
        wround[w] = a; wrep[w] = e; wacked[w] = 0
     :: k == ABORT ->
        if :: wround[w] == a -> wround[w] = 0; wrep[w] = 0; wacked[w] = 0 :: else -> skip fi
     :: k == COMPLETE ->
        /* (b) complete only for what the sender committed, fenced, while it led */
        assert((ehist & (1 << a)) && cep[a] == e);
        if :: a > wmax[w] -> wmax[w] = a :: else -> skip fi;
        if :: wround[w] == a -> wround[w] = 0; wrep[w] = 0; wacked[w] = 0 :: else -> skip fi
     fi
  fi;
  k = 0; a = 0; e = 0
}

proctype worker(byte w) {
  mtype k; byte a, e;
end:
  do
  :: d_step { nempty(d2w[w]) -> deliver(w, 0) }
  :: d_step { nempty(d2w[2+w]) -> deliver(w, 1) }
  /* ack the open barrier on its stream, whenever the snapshot is done (late is fine) */
  :: d_step { wround[w] != 0 && !wacked[w] && wconn[w] != NONE &&
              len(w2d[2*w + wconn[w]]) < 1 ->
       w2d[2*w + wconn[w]] ! wround[w]; wacked[w] = 1 }
  /* follow the leader: reconnect (hello, takeover of its own task) to the daemon etcd names,
     when its stream ended or goes to a daemon that no longer holds the leader key */
  :: d_step { wconn[w] != 0 && role[0] == LEADER && myep[0] == ekey &&
              myep[wconn[w]] != ekey -> wconn[w] = 0 }
  :: d_step { wconn[w] != 1 && role[1] == LEADER && myep[1] == ekey &&
              myep[wconn[w]] != ekey -> wconn[w] = 1 }
  od
}

init {
  atomic {
    wconn[0] = NONE; wconn[1] = NONE;
    run etcd(); run daemon(0); run daemon(1); run worker(0); run worker(1)
  }
}
