"""ckptd's /metrics as Prometheus sees it: `promtool check metrics` passes with no lint problem, and
a real Prometheus server (Debian's `prometheus` package) scraping ckptd on loopback every second
answers a query for the completed-checkpoints counter with a value above 0. The alert rules and
the Grafana dashboard of deploy/ read only series the page has, and the rules pass `promtool check
rules` and their unit tests (`promtool test rules`)."""
import json
import os
import re
import shutil
import subprocess
import unittest
import urllib.parse
import urllib.request

import e2e_util as e2e

BUILD_DIR = None
DEPLOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy")
ALERTS = os.path.join(DEPLOY, "prometheus", "ckptd-alerts.yml")
ALERTS_TEST = os.path.join(DEPLOY, "prometheus", "ckptd-alerts.test.yml")
DASHBOARD = os.path.join(DEPLOY, "grafana", "ckptd-dashboard.json")


http_get = e2e.http_get
sample = e2e.sample


class PrometheusTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.addCleanup(self.ws.close)
        config = self.ws.write_config("metrics:\n  per_pipeline: true\n")
        self.daemon = self.ws.start_daemon(config)
        self.metrics_url = f"http://127.0.0.1:{self.ws.metrics_port}/metrics"
        self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}", "--job", "demo",
                      "--pipelines", "2", "--tasks-per-pipeline", "2", "--create",
                      "--interval", "200ms", "--timeout", "10s", "--ack-delay-ms", "5",
                      "--duration", "120s")
        e2e.wait_until(lambda: (sample(http_get(self.metrics_url)[2],
                                       "ckptd_checkpoints_completed_total") or 0) > 0,
                       60, "a checkpoint to complete")

    def test_promtool_accepts_the_page_without_lint_problems(self):
        promtool = shutil.which("promtool")
        e2e.need_tool(self, promtool, "promtool (Debian package prometheus)")
        status, content_type, page = http_get(self.metrics_url)
        self.assertEqual(status, 200)
        self.assertTrue(content_type.startswith("text/plain; version=0.0.4"), content_type)
        r = subprocess.run([promtool, "check", "metrics"], input=page, capture_output=True,
                           text=True, timeout=60)
        output = (r.stdout + r.stderr).strip()
        print(f"\n$ promtool check metrics < /metrics  (exit {r.returncode})\n"
              f"{output or '(no output: no errors, no lint problems)'}")
        self.assertEqual(r.returncode, 0, output)
        self.assertEqual(output, "", "promtool reported lint problems")
        print("--- /metrics excerpt ---")
        for line in page.splitlines():
            if line.startswith(("ckptd_checkpoints_", "ckptd_pipelines", "ckptd_worker_sessions",
                                "ckptd_build_info", "ckptd_acks_total",
                                "ckptd_pipeline_checkpoints_completed_total")):
                print(line)

    def test_the_alerts_and_the_dashboard_read_only_series_the_page_has(self):
        page = http_get(self.metrics_url)[2]
        families = {line.split()[2] for line in page.splitlines() if line.startswith("# TYPE ")}
        for name in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                     "process_open_fds", "process_threads"):
            self.assertIn(name, families)
        self.assertGreater(sample(page, "process_resident_memory_bytes"), 1 << 20)
        self.assertGreaterEqual(sample(page, "process_threads"), 2)
        read = set()
        for part in (ALERTS, DASHBOARD):
            with open(part) as f:
                read |= set(re.findall(r"\b((?:ckptd|process)_[a-z_]+)", f.read()))
        self.assertGreater(len(read), 10)

        def family(name):
            for suffix in ("_bucket", "_sum", "_count"):
                if name.endswith(suffix) and name[:-len(suffix)] in families:
                    return name[:-len(suffix)]
            return name
        self.assertEqual(sorted(n for n in read if family(n) not in families), [],
                         "series the alerts or the dashboard read that ckptd does not export")

    def test_promtool_checks_and_unit_tests_the_alert_rules(self):
        promtool = shutil.which("promtool")
        e2e.need_tool(self, promtool, "promtool (Debian package prometheus)")
        for args in (["check", "rules", ALERTS], ["test", "rules", ALERTS_TEST]):
            r = subprocess.run([promtool, *args], capture_output=True, text=True, timeout=60,
                               cwd=os.path.dirname(ALERTS))
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        self.assertTrue(all(t["expr"] for p in dashboard["panels"] for t in p["targets"]))

    def test_a_real_prometheus_scrapes_and_answers_the_query(self):
        prometheus = shutil.which("prometheus")
        e2e.need_tool(self, prometheus, "prometheus (Debian package prometheus)")
        web_port = e2e.free_port()
        config = self.ws.path("prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: ckptd\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{self.ws.metrics_port}']\n")
        with open(self.ws.path("prometheus.log"), "ab") as log:
            proc = subprocess.Popen(
                [prometheus, f"--config.file={config}",
                 f"--storage.tsdb.path={self.ws.path('prometheus-data')}",
                 f"--web.listen-address=127.0.0.1:{web_port}", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.ws.procs.append(proc)
        api = f"http://127.0.0.1:{web_port}"

        def ready():
            if proc.poll() is not None:
                raise AssertionError("prometheus exited:\n" + self.ws.read_log("prometheus.log"))
            try:
                return http_get(api + "/-/ready", timeout=2)[0] == 200
            except OSError:
                return False

        e2e.wait_until(ready, 60, "prometheus to be ready")
        query = "ckptd_checkpoints_completed_total"
        url = api + "/api/v1/query?" + urllib.parse.urlencode({"query": query})
        answer = {}

        def counted():
            nonlocal answer
            answer = json.loads(http_get(url)[2])
            results = answer.get("data", {}).get("result", [])
            return answer.get("status") == "success" and any(
                float(r["value"][1]) > 0 for r in results)

        e2e.wait_until(counted, 60, f"prometheus to answer {query} > 0")
        print(f"\n$ curl '{api}/api/v1/query?query={query}'\n{json.dumps(answer)}")
        result = answer["data"]["result"][0]
        self.assertEqual(result["metric"]["__name__"], query)
        self.assertEqual(result["metric"]["job"], "ckptd")
        self.assertGreater(float(result["value"][1]), 0)

        # The target is healthy in Prometheus' own view.
        targets = json.loads(http_get(api + "/api/v1/targets")[2])
        health = [t["health"] for t in targets["data"]["activeTargets"]]
        self.assertEqual(health, ["up"], targets)


if __name__ == "__main__":
    e2e.main(globals())
