"""What PipelineWorker refuses at construction, and the bounds of set_position."""
import os
import tempfile
import unittest

from ckpt_worker import PipelineWorker
from ckpt_worker.worker import MAX_POSITION


def make(server="127.0.0.1:7070", **options):
    arguments = dict(worker_id="w1", job_id="job", pipeline_id="p", task_ids=["0"])
    arguments.update(options)
    return PipelineWorker(server, **arguments)


class OptionsTest(unittest.TestCase):
    def setUp(self):
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.token_file = os.path.join(directory.name, "token")
        with open(self.token_file, "w") as f:
            f.write("s3cret\n")

    def test_a_worker_serves_at_least_one_task(self):
        with self.assertRaisesRegex(ValueError, "at least one task"):
            make(task_ids=[])

    def test_a_bad_server_list_is_refused(self):
        with self.assertRaisesRegex(ValueError, "HOST:PORT"):
            make("127.0.0.1")
        with self.assertRaisesRegex(ValueError, "named twice"):
            make("a:1,a:1")

    def test_a_bad_backoff_is_refused(self):
        with self.assertRaisesRegex(ValueError, "backoff"):
            make(backoff_initial=2.0, backoff_max=1.0)
        with self.assertRaisesRegex(ValueError, "backoff"):
            make(backoff_initial=0)

    def test_tls_options_go_together(self):
        with self.assertRaisesRegex(ValueError, "go together"):
            make(cert_file=self.token_file)
        with self.assertRaisesRegex(ValueError, "needs TLS"):
            make(tls_server_name="ckptd.example")

    def test_a_token_goes_in_the_clear_only_to_loopback_addresses(self):
        with self.assertRaisesRegex(ValueError, "token_file without TLS"):
            make("127.0.0.1:7070,10.0.0.2:7070", token_file=self.token_file)
        make("127.0.0.1:7070,localhost:7071,[::1]:7072", token_file=self.token_file).close()

    def test_an_unknown_transport_is_refused(self):
        with self.assertRaisesRegex(ValueError, "transport: 'session' or 'connect'"):
            make(transport="carrier-pigeon")

    def test_a_token_file_without_a_token_is_refused(self):
        with open(self.token_file, "w") as f:
            f.write("\n")
        with self.assertRaisesRegex(ValueError, "holds no valid token"):
            make(token_file=self.token_file)


class SetPositionTest(unittest.TestCase):
    def setUp(self):
        self.worker = make()
        self.addCleanup(self.worker.close)

    def test_only_this_worker_s_tasks(self):
        with self.assertRaisesRegex(ValueError, "not one of this worker's"):
            self.worker.set_position("7", 1)

    def test_a_position_is_an_int(self):
        for position in (True, 1.0, "1", None):
            with self.subTest(position=position):
                with self.assertRaises(TypeError):
                    self.worker.set_position("0", position)

    def test_a_position_is_between_zero_and_the_maximum(self):
        for position in (-1, MAX_POSITION + 1):
            with self.subTest(position=position):
                with self.assertRaises(ValueError):
                    self.worker.set_position("0", position)
        self.worker.set_position("0", 0)
        self.worker.set_position("0", MAX_POSITION)


if __name__ == "__main__":
    unittest.main()
