"""The web view in a real browser: headless Chromium (Debian's `chromium`) loads the pages of a
running ckptd with simulated workers, one of which holds its acks, and the test reads the DOM the
browser built: a row per pipeline, the holding worker and its tasks named on the slow pipeline's
page beside the why sentence, the duration plot drawn, and a job id with `<script>` in it shown as
text (no script element anywhere). Screenshots of the list and the slow pipeline's page are kept
under $CKPT_ARTIFACTS_DIR/web_view/ (default <build-dir>/artifacts/web_view/)."""
import html.parser
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import urllib.parse

import e2e_util as e2e

BUILD_DIR = None

HOSTILE_JOB = 'x<script>alert("ckptd")'


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag = tag
        self.attrs = dict(attrs)
        self.parent = parent
        self.children = []
        self.text_parts = []

    def text(self):
        return "".join(self.text_parts + [c.text() for c in self.children])

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()

    def find_all(self, tag, **attrs):
        """Elements of `tag` whose attributes hold `attrs` (class_ matches one class name)."""
        found = []
        for node in self.walk():
            if node.tag != tag:
                continue
            classes = node.attrs.get("class", "").split()
            if "class_" in attrs and attrs["class_"] not in classes:
                continue
            if all(node.attrs.get(k) == v for k, v in attrs.items() if k != "class_"):
                found.append(node)
        return found


class DomBuilder(html.parser.HTMLParser):
    """The element tree of a serialized DOM (what `chromium --dump-dom` prints)."""
    VOID = {"meta", "input", "br", "img", "link", "hr", "area", "base", "col", "source", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", [], None)
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.current)
        self.current.children.append(node)
        if tag not in self.VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Node(tag, attrs, self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is not self.root:
            self.current = node.parent

    def handle_data(self, data):
        self.current.text_parts.append(data)


def parse_dom(text):
    builder = DomBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class WebViewBrowserTest(unittest.TestCase):
    def setUp(self):
        self.chromium = find_chromium()
        e2e.need_tool(self, self.chromium, "chromium (Debian package chromium)")
        self.ws = e2e.Workspace(BUILD_DIR)
        self.addCleanup(self.ws.close)
        self.profile = tempfile.mkdtemp(prefix="ckptd-chromium-")
        self.addCleanup(shutil.rmtree, self.profile, True)
        artifacts = os.environ.get("CKPT_ARTIFACTS_DIR") or os.path.join(BUILD_DIR, "artifacts")
        self.artifacts = os.path.join(os.path.abspath(artifacts), "web_view")
        os.makedirs(self.artifacts, exist_ok=True)
        # A round counts as stuck after 1 s, so the held one is named as such. Every round of
        # the test stays retained: at a 300 ms interval the default 10 would release a linked
        # checkpoint within 3 s, less than two browser launches take on a loaded machine.
        config = self.ws.write_config("stuck_threshold_ms: 1000\ndefaults:\n  retained: 100000\n")
        self.ws.start_daemon(config)
        server = f"127.0.0.1:{self.ws.port}"
        common = ["--server", server, "--tasks-per-pipeline", "2", "--create", "--interval", "300ms",
                  "--timeout", "10m", "--duration", "240s"]
        self.ws.start("ckpt-worker-sim", "--job", "shop", "--pipelines", "3", "--ack-delay-ms",
                      "20", *common, log="sim-shop.log")
        self.ws.start("ckpt-worker-sim", "--job", "slow", "--pipelines", "1", "--ack-delay-ms",
                      "600000", "--worker-id", "w-holding", *common, log="sim-slow.log")
        self.ws.start("ckpt-worker-sim", "--job", HOSTILE_JOB, "--pipelines", "1",
                      "--ack-delay-ms", "5", *common, log="sim-hostile.log")

        def ready():
            status, _, body = e2e.http_get(self.ws.metrics_url("/api/v1/pipelines"))
            if status != 200 or json.loads(body)["total"] != 5:
                return False
            status, _, body = e2e.http_get(self.ws.metrics_url("/api/v1/pipelines/slow/p0"))
            if status != 200 or json.loads(body)["explanation"]["holdup"] != "ROUND_SLOW":
                return False
            _, _, body = e2e.http_get(self.ws.metrics_url("/api/v1/pipelines/shop/p0"))
            return len(json.loads(body)["checkpoints"]) >= 3
        e2e.wait_until(ready, 60, "5 pipelines, a stuck round on slow/p0, a history on shop/p0")

    def browser(self, *args):
        command = [self.chromium, "--headless", "--no-sandbox", "--disable-gpu",
                   "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
                   f"--user-data-dir={self.profile}", "--window-size=1280,900", *args]
        run = subprocess.run(command, capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        return run.stdout

    def dom(self, path):
        return parse_dom(self.browser("--dump-dom", self.ws.metrics_url(path)))

    def screenshot(self, path, name):
        target = os.path.join(self.artifacts, name)
        if os.path.exists(target):
            os.remove(target)
        self.browser(f"--screenshot={target}", self.ws.metrics_url(path))
        self.assertTrue(os.path.getsize(target) > 10000, f"{target} looks empty")
        print(f"\nscreenshot: {target}")

    def test_the_list_shows_every_pipeline_and_ids_as_text(self):
        dom = self.dom("/")
        rows = dom.find_all("tr", class_="pipeline")
        self.assertEqual(len(rows), 5, [r.attrs for r in rows])
        jobs = sorted(r.attrs["data-job-id"] for r in rows)
        self.assertEqual(jobs, sorted(["shop"] * 3 + ["slow", HOSTILE_JOB]))
        hostile = [r for r in rows if r.attrs["data-job-id"] == HOSTILE_JOB][0]
        cell = hostile.find_all("td", class_="job")[0]
        self.assertEqual(cell.text(), HOSTILE_JOB, "the job id renders as the text it is")
        self.assertEqual(dom.find_all("script"), [], "no script element: the id stayed text")
        running = [r for r in rows if r.attrs["data-state"] == "RUNNING"]
        self.assertEqual(len(running), 5)
        # The hostile job's page is reachable through its link, and shows the id as text too.
        link = hostile.find_all("a")[0].attrs["href"]
        self.assertEqual(urllib.parse.unquote(link), f"/pipelines/{HOSTILE_JOB}/p0")
        page = self.dom(link)
        self.assertEqual(page.find_all("span", id="job-id")[0].text(), HOSTILE_JOB)
        self.assertEqual(page.find_all("script"), [])
        self.assertIn(HOSTILE_JOB, page.find_all("title")[0].text())
        self.screenshot("/", "pipelines.png")

    def test_the_slow_pipeline_names_the_worker_that_holds_its_round(self):
        dom = self.dom("/pipelines/slow/p0")
        why = dom.find_all("p", id="why")
        self.assertEqual(len(why), 1)
        self.assertEqual(why[0].attrs["data-holdup"], "ROUND_SLOW")
        self.assertIn("w-holding", why[0].text())
        self.assertIn("waiting for", why[0].text())
        waiting = dom.find_all("tr", class_="waiting-task")
        self.assertEqual(sorted(r.attrs["data-task-id"] for r in waiting), ["0", "1"])
        for row in waiting:
            self.assertIn("w-holding", row.text())
        self.assertIn("pending for", dom.find_all("p", id="pending-round")[0].text())
        plot = dom.find_all("svg", id="duration-plot")
        self.assertEqual(len(plot), 1, "the duration plot is drawn")
        self.assertGreaterEqual(len(plot[0].find_all("rect", class_="pending")), 1)
        self.screenshot("/pipelines/slow/p0", "slow-pipeline.png")

    def test_a_healthy_pipeline_plots_its_history_and_links_each_round(self):
        status, _, body = e2e.http_get(self.ws.metrics_url("/api/v1/pipelines/shop/p0"))
        self.assertEqual(status, 200)
        completed = [c for c in json.loads(body)["checkpoints"] if c["status"] == "COMPLETED"]
        self.assertTrue(completed)
        for c in completed:
            self.assertEqual(c["state"], {}, "a history entry comes without its task states")
            self.assertGreater(c["state_bytes"], 0, "the simulator reports its states' sizes")
        dom = self.dom("/pipelines/shop/p0")
        bars = dom.find_all("rect", class_="completed")
        self.assertGreaterEqual(len(bars), 2)
        rows = dom.find_all("tr", class_="checkpoint")
        self.assertGreaterEqual(len(rows), 2)
        completed = [r for r in rows if r.attrs["data-status"] == "COMPLETED"][0]
        link = completed.find_all("a")[0].attrs["href"]
        checkpoint = self.dom(link)
        title = checkpoint.find_all("title")[0].text()
        self.assertIn("checkpoint", title, f"{link} answered with an error page: {title}")
        tasks = checkpoint.find_all("tr", class_="task")
        self.assertEqual(sorted(t.attrs["data-task-id"] for t in tasks), ["0", "1"])


if __name__ == "__main__":
    e2e.main(globals())
