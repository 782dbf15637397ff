#include "etcd/etcd_mirror.h"

#include <spdlog/spdlog.h>

#include <charconv>

#include "core/printable.h"

namespace ckpt::etcd {
namespace {

using etcdserverpb::Event;
using etcdserverpb::KeyValue;

// After a failed load or a broken watch: the next try, the pause doubling up to the max while
// failures follow one another (etcd down: a standby must not reread the prefix every second).
constexpr auto kFirstRetryPause = std::chrono::milliseconds(1000);
constexpr auto kMaxRetryPause = std::chrono::milliseconds(30000);
// A load under way when Take is called is the read the caller would make: it is waited for, up
// to this long.
constexpr auto kLoadUnderWayWait = std::chrono::seconds(30);

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// Whether `kv` (of `ref`'s pipeline) was written after `newest`: a later revision, or of the
// same txn the higher id (the later one in call order: etcd_layout.h).
bool WrittenAfter(const KeyValue& kv, int64_t newest_revision, const std::string& newest_key) {
  return newest_key.empty() || kv.mod_revision() > newest_revision ||
         (kv.mod_revision() == newest_revision && kv.key() > newest_key);
}

// Log lines remembered (so that each unreadable key is said once), at most.
constexpr size_t kSaidKept = 4096;

}  // namespace

std::string WhyUnreadable(const Layout& layout, const KeyValue& kv) {
  const std::string& key = kv.key();
  if (!layout.IsKnownKey(key)) return "a key this ckptd does not know";
  if (auto record = layout.ParsePipelineKey(key)) {
    if (record->is_spec ? !DecodeSpec(kv.value(), record->key).has_value()
                        : !DecodeProgress(kv.value()).has_value()) {
      return record->is_spec ? "its spec does not parse" : "its progress does not parse";
    }
    return "";
  }
  if (layout.ParseCounterKey(key)) {
    int64_t value = 0;
    auto [end, error] =
        std::from_chars(kv.value().data(), kv.value().data() + kv.value().size(), value);
    if (error != std::errc() || end != kv.value().data() + kv.value().size() || value < 0) {
      return "its id counter is not a number";
    }
    return "";
  }
  if (key.rfind(layout.GroupsPrefix(), 0) == 0) {
    const std::string name = key.substr(layout.GroupsPrefix().size());
    if (!DecodeGroup(kv.value(), name)) return "its alignment group value does not parse";
  }
  return "";
}

std::optional<std::map<PipelineKey, const KeyValue*>> NewestCheckpoints(
    const Layout& layout, const std::vector<KeyValue>& history) {
  std::map<PipelineKey, const KeyValue*> newest;
  for (const KeyValue& kv : history) {
    auto ref = layout.ParseCheckpointKey(kv.key());
    if (!ref) return std::nullopt;
    const KeyValue*& last = newest[ref->key];
    if (!last || WrittenAfter(kv, last->mod_revision(), last->key())) last = &kv;
  }
  return newest;
}

EtcdMirror::EtcdMirror(std::shared_ptr<EtcdClient> client, Layout layout, Loader load)
    : client_(std::move(client)), layout_(std::move(layout)), load_(std::move(load)) {}

EtcdMirror::~EtcdMirror() { Stop(); }

void EtcdMirror::Start() {
  thread_ = std::thread([this] { Run(); });
}

void EtcdMirror::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    if (stream_) stream_->Cancel();
  }
  changed_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

uint64_t EtcdMirror::loads() const {
  MutexLock lock(mu_);
  return loads_;
}

uint64_t EtcdMirror::events_applied() const {
  MutexLock lock(mu_);
  return events_;
}

size_t EtcdMirror::unreadable() const {
  MutexLock lock(mu_);
  return unreadable_.size();
}

void EtcdMirror::Check(const KeyValue& kv, bool put) {
  const std::string& key = kv.key();
  std::string why = put ? WhyUnreadable(layout_, kv) : "";
  if (why.empty()) {  // deleted, or readable now: said again if it breaks again
    unreadable_.erase(key);
    for (auto it = said_.lower_bound({key, ""}); it != said_.end() && it->first == key;) {
      it = said_.erase(it);
    }
    return;
  }
  unreadable_[key] = why;
  if (!said_.emplace(key, why).second) return;  // said already
  if (said_.size() > kSaidKept) said_.clear();  // a flood of keys: say them again
  spdlog::error(
      "standby: {} under the etcd prefix cannot be read ({}): a takeover would quarantine its "
      "pipeline or group (UNREADABLE) and run every other one; fix or delete the key",
      Printable(key), why);
}

void EtcdMirror::Run() {
  std::chrono::milliseconds pause(0);
  int failures = 0;  // in a row: the first and every tenth are logged
  auto failed = [&](const std::string& what) {
    if (failures % 10 == 0) {
      spdlog::warn("standby: {} ({} in a row); trying again in {} s", what, failures + 1,
                   std::max<int64_t>(1, pause.count() / 1000));
    }
    ++failures;
  };
  for (;;) {
    {
      MutexLock lock(mu_);
      if (changed_.WaitFor(lock, pause, [&]() CKPT_REQUIRES(mu_) { return stopping_; })) return;
      loading_ = true;
    }
    pause = failures == 0 ? kFirstRetryPause : std::min(kMaxRetryPause, pause * 2);
    auto image = load_();
    if (!image.ok()) {
      {
        MutexLock lock(mu_);
        loading_ = false;
      }
      changed_.NotifyAll();
      failed("reading etcd for a warm copy failed: " + image.status().ToString());
      continue;
    }
    const int64_t from = image->revision + 1;
    auto stream = client_->Watch();
    bool stop = false;
    {
      MutexLock lock(mu_);
      stop = stopping_;
      loading_ = false;
      if (!stop) {
        Install(std::move(*image));
        stream_ = stream.get();
      }
    }
    changed_.NotifyAll();
    etcdserverpb::WatchResponse response;
    std::string why = "stopped";
    if (!stop) {
      etcdserverpb::WatchRequest create;
      auto* request = create.mutable_create_request();
      request->set_key(layout_.Root());
      request->set_range_end(PrefixEnd(layout_.Root()));
      request->set_start_revision(from);
      bool reading = stream->Write(create);
      why = "the stream ended";
      while (reading && stream->Read(&response)) {
        if (response.compact_revision() > 0) {
          why = "etcd compacted revision " + std::to_string(response.compact_revision());
          break;
        }
        if (response.canceled()) {
          why = "etcd cancelled it: " + response.cancel_reason();
          break;
        }
        {
          MutexLock lock(mu_);
          for (Event& event : *response.mutable_events()) Apply(event);
        }
        changed_.NotifyAll();
        failures = 0;  // the watch works
      }
    }
    {
      MutexLock lock(mu_);
      stream_ = nullptr;
      stop = stopping_;
    }
    stream->Cancel();
    while (stream->Read(&response)) {
    }
    const Status ended = stream->Finish();
    if (stop) return;
    failed("the watch that keeps its copy of etcd warm ended (" + why +
           (ended.ok() ? "" : ": " + ended.ToString()) + "); it reads the copy again");
  }
}

void EtcdMirror::Install(StoreImage image) {
  auto keyed = [](std::vector<KeyValue>& kvs) {
    std::map<std::string, KeyValue> map;
    for (KeyValue& kv : kvs) {
      std::string key = kv.key();
      map.emplace(std::move(key), std::move(kv));
    }
    return map;
  };
  records_ = keyed(image.records);
  counters_ = keyed(image.counters);
  newest_.clear();
  std::vector<KeyValue> known_history;  // the keys that parse, as ReadImage takes them
  for (const KeyValue& kv : image.history) {
    if (layout_.ParseCheckpointKey(kv.key())) known_history.push_back(kv);
  }
  if (auto newest = NewestCheckpoints(layout_, known_history)) {
    for (const auto& [key, kv] : *newest) newest_[key] = Newest{kv->key(), kv->mod_revision()};
  }
  history_ = keyed(image.history);
  newest_values_ = std::move(image.newest_values);
  layout_value_ = std::move(image.layout);
  high_water_ = std::move(image.high_water);
  others_.clear();
  for (std::string& key : image.others) {
    KeyValue kv;
    kv.set_key(key);
    others_.emplace(std::move(key), std::move(kv));
  }
  // What the image holds is checked as the watch's events are: each unreadable one said once.
  // What was unreadable before is judged again, except a group's record, whose value a load does
  // not read (keys only): it stays as its last event left it while its key is there.
  std::map<std::string, std::string> groups_unreadable;
  for (auto& [key, why] : unreadable_) {
    if (key.rfind(layout_.GroupsPrefix(), 0) == 0 && others_.count(key)) {
      groups_unreadable.emplace(key, std::move(why));
    }
  }
  unreadable_ = std::move(groups_unreadable);
  for (const auto* map : {&records_, &counters_}) {
    for (const auto& [key, kv] : *map) Check(kv, true);
  }
  for (const auto& [key, kv] : others_) {
    if (!layout_.IsKnownKey(key)) Check(kv, true);
  }
  for (const auto& [key, kv] : history_) {
    if (!layout_.ParseCheckpointKey(key)) Check(kv, true);  // as Apply checks such a key
  }
  writer_revision_ = image.writer_revision;
  revision_ = image.revision;
  loaded_ = true;
  ++loads_;
}

void EtcdMirror::Apply(Event& event) {
  KeyValue& kv = *event.mutable_kv();
  const std::string& key = kv.key();
  const bool put = event.type() == Event::PUT;
  ++events_;
  revision_ = std::max(revision_, kv.mod_revision());
  auto keep = [&](std::map<std::string, KeyValue>& map) {
    if (put) {
      map[key] = std::move(kv);  // map[key] copies the key before the value moves
    } else {
      map.erase(key);
    }
  };
  if (key == layout_.WriterKey()) {
    writer_revision_ = put ? kv.mod_revision() : 0;
  } else if (key == layout_.LayoutKey()) {
    layout_value_ = put ? std::optional<std::string>(kv.value()) : std::nullopt;
  } else if (key == layout_.HighWaterKey()) {
    high_water_ = put ? std::optional<std::string>(kv.value()) : std::nullopt;
  } else if (StartsWith(key, layout_.PipelinesPrefix())) {
    Check(kv, put);
    keep(records_);
  } else if (StartsWith(key, layout_.CountersPrefix())) {
    Check(kv, put);
    keep(counters_);
  } else if (StartsWith(key, layout_.ChunksRoot()) || key == layout_.ProbeKey()) {
    // Not loaded.
  } else if (!StartsWith(key, layout_.CheckpointsPrefix())) {
    // Election keys, groups, keys no ckptd writes: a load lists them, keys only.
    Check(kv, put);
    if (put) {
      KeyValue bare;
      bare.set_key(key);
      others_[key] = std::move(bare);
    } else {
      others_.erase(key);
    }
  } else {
    // A checkpoint key that does not parse is said as it arrives; its value is read at takeover
    // (decoding every completion here would cost a standby what the leader spends).
    if (!layout_.ParseCheckpointKey(key)) Check(kv, put);
    auto ref = layout_.ParseCheckpointKey(key);
    if (put) {
      // As a load reads the history: keys only (the value is kept below while it is the newest).
      std::string value = std::move(*kv.mutable_value());
      kv.clear_value();
      history_[key] = kv;
      if (ref) {
        Newest& newest = newest_[ref->key];
        if (WrittenAfter(kv, newest.mod_revision, newest.key)) {
          if (!newest.key.empty()) newest_values_.erase(newest.key);
          newest = Newest{key, kv.mod_revision()};
          newest_values_[key] = std::move(value);
        }
      }
    } else {
      history_.erase(key);
      newest_values_.erase(key);
      if (ref) {
        // The newest write goes only with its pipeline (trims never take it): if other keys of
        // that pipeline stayed, Take finds a newest value missing and the takeover reads etcd.
        auto newest = newest_.find(ref->key);
        if (newest != newest_.end() && newest->second.key == key) newest_.erase(newest);
      }
    }
  }
}

StoreImage EtcdMirror::Snapshot() const {
  StoreImage image;
  image.revision = revision_;
  image.writer_revision = writer_revision_;
  for (const auto& [key, kv] : records_) image.records.push_back(kv);
  for (const auto& [key, kv] : counters_) image.counters.push_back(kv);
  for (const auto& [key, kv] : history_) image.history.push_back(kv);
  image.newest_values = newest_values_;
  image.layout = layout_value_;
  image.high_water = high_water_;
  for (const auto& [key, kv] : others_) image.others.push_back(key);
  return image;
}

std::optional<StoreImage> EtcdMirror::Take(int64_t writer_revision,
                                           std::chrono::milliseconds wait) {
  std::optional<StoreImage> image;
  {
    MutexLock lock(mu_);
    auto caught_up = [&]() CKPT_REQUIRES(mu_) {
      return loaded_ && writer_revision_ >= writer_revision;
    };
    bool ready = changed_.WaitFor(lock, wait, caught_up);
    if (!ready && loading_) {
      // A load under way (a daemon that won at once, a watch that broke): it is the same read the
      // caller would make, and Stop could not cut it short. Its image, then the watch's events.
      changed_.WaitFor(lock, kLoadUnderWayWait, [&]() CKPT_REQUIRES(mu_) { return !loading_; });
      ready = changed_.WaitFor(lock, wait, caught_up);
    }
    if (ready) image = Snapshot();
  }
  Stop();
  if (!image) return std::nullopt;
  auto newest = NewestCheckpoints(layout_, image->history);
  if (!newest) return std::nullopt;
  for (const auto& [key, kv] : *newest) {
    if (!image->newest_values.count(kv->key())) return std::nullopt;
  }
  return image;
}

}  // namespace ckpt::etcd
