package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/internal/toolbin"
	"github.com/sluicehq/sluice/sdk/node"
)

// bins are the node and CLI binaries built by TestMain.
var bins struct{ node, sluice string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-console-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins.node, bins.sluice = filepath.Join(dir, "testnode"), filepath.Join(dir, "sluice")
	// Built without the race detector: the browser tests exercise the
	// console, not the node (whose races the other suites look for).
	cmd := exec.Command("go", "build", "-o", dir+"/", "github.com/sluicehq/sluice/internal/testnode", "github.com/sluicehq/sluice/cmd/sluice")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building testnode and sluice:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// artifacts returns the directory screenshots are written to:
// $SLUICE_ARTIFACTS/console when set (kept), else a test temp dir.
func artifacts(t *testing.T) string {
	dir := t.TempDir()
	if a := os.Getenv("SLUICE_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "console")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("console screenshots in %s", dir)
	return dir
}

// browser starts headless Chromium (with a fresh profile and nothing that
// reaches the network) and returns a context for its tab, and a func that
// returns the errors the pages logged so far (exceptions, CSP violations,
// failed requests).
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	bin, err := toolbin.Chromium()
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-background-timer-throttling", true), chromedp.Flag("disable-renderer-backgrounding", true),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() { bcancel(); acancel(); cancel() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start Chromium (%s): %v", bin, err)
	}
	var mu sync.Mutex
	var errs []string
	msgs := chromedp.Console(bctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == "error" || m.IsException() {
				mu.Lock()
				errs = append(errs, m.String()+" ("+m.URL+")")
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { bcancel(); <-done })
	return bctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(errs)
	}
}

// run runs browser actions, failing the test with what was being done.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("browser: evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until the expression is truthy in the page.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText.slice(0, 2000)`))
		t.Fatalf("browser: waiting for %s: %v\npage: %s", what, err, body)
	}
}

// goTo opens a page of the console already loaded (a hash change).
func goTo(t *testing.T, ctx context.Context, hash string) {
	t.Helper()
	eval[string](t, ctx, fmt.Sprintf("location.hash = %q", hash))
}

// screenshot writes the page as dir/name.png.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// testCluster is three testnode processes sharing a Consul agent.
type testCluster struct {
	t     *testing.T
	http  []string
	procs []*proctest.Process
	dir   string
	agent *consultest.Agent
}

// startCluster starts three nodes, n1 to n3, with extra arguments.
func startCluster(t *testing.T, extra ...string) *testCluster {
	t.Helper()
	c := &testCluster{t: t, dir: t.TempDir(), agent: consultest.Start(t)}
	for _, id := range []string{"n1", "n2", "n3"} {
		args := []string{"-id", id, "-data", filepath.Join(c.dir, id), "-consul", c.agent.Addr(), "-node-insecure",
			"-records", "1000000000", "-keys", "1000", "-rate", "400", "-gen-parallelism", "2", "-count-parallelism", "3",
			"-trace-sample", "1"} // every record timed: latencies at once
		p, err := proctest.Start(bins.node, append(args, extra...), filepath.Join(c.dir, id+".log"))
		if err != nil {
			b, _ := os.ReadFile(filepath.Join(c.dir, id+".log"))
			t.Fatalf("node %s: %v\n%s", id, err, b)
		}
		t.Cleanup(p.Kill)
		c.http = append(c.http, p.HTTP)
		c.procs = append(c.procs, p)
	}
	sluicetest.WaitEvery(t, 90*time.Second, 200*time.Millisecond, "three nodes running gen and count", func() bool {
		var st api.ClusterStatus
		if c.get("/v1/status", &st) != 200 || len(st.Nodes) != 3 {
			return false
		}
		running := 0
		for _, o := range st.Operators {
			if o.State == "running" {
				running++
			}
		}
		return running == 2
	})
	return c
}

// get GETs path from n1's control API into out and returns the status.
func (c *testCluster) get(path string, out any) int {
	resp, err := http.Get("http://" + c.http[0] + path)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode == 200 && out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return 0
		}
	}
	return resp.StatusCode
}

// ls runs `sluice ls --json` against node i and returns the operators.
func (c *testCluster) ls(i int) []api.OperatorView {
	c.t.Helper()
	out, err := exec.Command(bins.sluice, "--addr", c.http[i], "--json", "ls").Output()
	if err != nil {
		c.t.Fatalf("sluice ls: %v", err)
	}
	var ops []api.OperatorView
	if err := json.Unmarshal(out, &ops); err != nil {
		c.t.Fatalf("sluice ls --json: %v in %s", err, out)
	}
	return ops
}

// lsInstances returns the instances `sluice ls` shows for op (-1: not listed).
func (c *testCluster) lsInstances(op string) int {
	for _, o := range c.ls(1) {
		if o.Name == op {
			return o.Instances
		}
	}
	return -1
}

// TestConsoleInABrowser drives the console in headless Chromium against a
// three-node cluster, from the second node's URL: the graph shows every
// operator and stream with moving rates, an operator's page scales it, the
// deploy page shows a bad manifest's field error and deploys a good one
// (its dangling stream marked), the operator page kills it, the nodes
// page lists the members; and the graph renders 50 operators in under a
// second, measured in the page. A screenshot of each page is written (see
// artifacts).
func TestConsoleInABrowser(t *testing.T) {
	c := startCluster(t)
	shots := artifacts(t)
	ctx, pageErrors := browser(t)
	ui := "http://" + c.http[1] + "/ui/"

	t.Run("graph", func(t *testing.T) {
		run(t, ctx, "open the graph", chromedp.Navigate(ui+"#/graph"))
		var streams []api.StreamView
		if code := c.get("/v1/streams", &streams); code != 200 {
			t.Fatalf("GET /v1/streams = %d", code)
		}
		var ops []api.OperatorView
		if code := c.get("/v1/operators", &ops); code != 200 {
			t.Fatalf("GET /v1/operators = %d", code)
		}
		var wantOps, wantStreams []string
		for _, o := range ops {
			wantOps = append(wantOps, o.Name)
		}
		for _, s := range streams {
			wantStreams = append(wantStreams, s.Name)
		}
		waitJS(t, ctx, "gen, count and words in the graph", `document.querySelector('#graph [data-operator="count"]') && document.querySelector('#graph [data-stream="words"]')`)
		shown := eval[[]string](t, ctx, `[...document.querySelectorAll('#graph [data-operator]')].map(e => e.dataset.operator).sort()`)
		shownStreams := eval[[]string](t, ctx, `[...document.querySelectorAll('#graph [data-stream]')].map(e => e.dataset.stream).sort()`)
		slices.Sort(wantOps)
		slices.Sort(wantStreams)
		if !slices.Equal(shown, wantOps) || !slices.Equal(shownStreams, wantStreams) {
			t.Fatalf("graph shows operators %v and streams %v, the API %v and %v", shown, shownStreams, wantOps, wantStreams)
		}
		// Rates move: gen's edge into words shows records/s, and a later
		// snapshot shows another figure.
		edge := `document.querySelector('#graph [data-edge="o:gen->s:words"]')`
		waitJS(t, ctx, "a rate on gen → words", edge+` && Number(`+edge+`.dataset.rate) > 0`)
		first := eval[string](t, ctx, edge+`.dataset.rate`)
		waitJS(t, ctx, "the rate on gen → words to change from "+first, edge+`.dataset.rate !== `+fmt.Sprintf("%q", first))
		label := eval[string](t, ctx, edge+`.textContent`)
		if !strings.HasSuffix(label, "/s") {
			t.Fatalf("edge label %q, want records/s", label)
		}
		screenshot(t, ctx, shots, "graph")
		// Clicking an operator opens its page.
		run(t, ctx, "click count", chromedp.Click(chromedp.CSS(`#graph [data-operator="count"] rect`)))
		waitJS(t, ctx, "count's page", `location.hash === '#/operator/count' && document.querySelectorAll('#op-table tr[data-instance]').length === 3`)
		waitJS(t, ctx, "count's latencies", `/(µs|ms) \/ /.test(document.querySelector('#op-table tr[data-instance]').textContent)`)
	})

	t.Run("scale", func(t *testing.T) {
		waitJS(t, ctx, "the scale field to show 3", `document.querySelector('#scale-instances').value === '3'`)
		run(t, ctx, "scale count to 4",
			chromedp.SetValue(chromedp.CSS("#scale-instances"), "4"),
			chromedp.Click(chromedp.CSS("#scale-apply")))
		waitJS(t, ctx, "the scale to be confirmed", `document.querySelector('#op-message').textContent.startsWith('Scaled to 4')`)
		sluicetest.WaitEvery(t, 60*time.Second, 200*time.Millisecond, "sluice ls to show count with 4 instances", func() bool { return c.lsInstances("count") == 4 })
		waitJS(t, ctx, "4 instances on count's page", `document.querySelectorAll('#op-table tr[data-instance]').length === 4 && document.querySelector('#op-table').textContent.includes('running')`)
		screenshot(t, ctx, shots, "operator")
	})

	t.Run("deploy", func(t *testing.T) {
		goTo(t, ctx, "#/deploy")
		waitJS(t, ctx, "the manifest field", `document.querySelector('#manifest')`)
		run(t, ctx, "deploy a bad manifest",
			chromedp.SetValue(chromedp.CSS("#manifest"), "name: orphan\nkind: gen\ninstances: -1\noutputs: [words, nowhere]\n"),
			chromedp.Click(chromedp.CSS("#deploy-submit")))
		waitJS(t, ctx, "the field error of instances", `document.querySelector('#manifest-errors li[data-field="instances"]')`)
		got := eval[string](t, ctx, `document.querySelector('#manifest-errors li[data-field="instances"]').textContent`)
		line := eval[string](t, ctx, `document.querySelector('#manifest-errors li[data-field="instances"]').dataset.line`)
		if !strings.Contains(got, "must be ≥ 1") || line != "3" {
			t.Fatalf("field error %q on line %s, want instances: must be ≥ 1 on line 3", got, line)
		}
		screenshot(t, ctx, shots, "deploy-error")
		if c.lsInstances("orphan") != -1 {
			t.Fatal("the bad manifest was deployed")
		}
		run(t, ctx, "deploy a good manifest",
			chromedp.SetValue(chromedp.CSS("#manifest"), "name: orphan\nkind: gen\noutputs: [words, nowhere]\n"),
			chromedp.Click(chromedp.CSS("#deploy-submit")))
		waitJS(t, ctx, "the deploy to be confirmed", `document.querySelector('#deploy-result').textContent.startsWith('Deployed')`)
		goTo(t, ctx, "#/graph")
		waitJS(t, ctx, "orphan in the graph, its stream marked dangling",
			`document.querySelector('#graph [data-operator="orphan"]') && document.querySelector('#graph [data-stream="nowhere"]').dataset.dangling === 'no consumer'`)
		screenshot(t, ctx, shots, "graph-dangling")
	})

	t.Run("kill", func(t *testing.T) {
		goTo(t, ctx, "#/operator/orphan")
		waitJS(t, ctx, "orphan's page", `document.querySelector('#op-cards') && document.querySelector('#op-cards').textContent.includes('gen')`)
		run(t, ctx, "kill orphan with its state",
			chromedp.Click(chromedp.CSS("#kill-open")))
		waitJS(t, ctx, "the confirmation", `document.querySelector('#kill-dialog').open`)
		screenshot(t, ctx, shots, "kill-confirm")
		run(t, ctx, "confirm", chromedp.Click(chromedp.CSS("#kill-purge")), chromedp.Click(chromedp.CSS("#kill-confirm")))
		waitJS(t, ctx, "the kill to be confirmed", `document.querySelector('#op-message').textContent.startsWith('Killed orphan and purged')`)
		sluicetest.WaitEvery(t, 30*time.Second, 200*time.Millisecond, "sluice ls without orphan", func() bool { return c.lsInstances("orphan") == -1 })
		if code := c.get("/v1/operators/orphan", nil); code != 404 {
			t.Fatalf("GET /v1/operators/orphan after the kill = %d, want 404", code)
		}
		waitJS(t, ctx, "the page to say orphan is gone", `!document.querySelector('#op-missing').hidden`)
	})

	t.Run("events of the topology", func(t *testing.T) {
		goTo(t, ctx, "#/events")
		waitJS(t, ctx, "the scale, the deploy and the kill on the timeline",
			`(() => { const rows = [...document.querySelectorAll('#events-table tr[data-event]')].map((r) => r.dataset.event + ' ' + r.textContent);
			  return rows.some((r) => r.startsWith('scaled') && r.includes('count') && r.includes('3 → 4 instances')) &&
			    rows.some((r) => r.startsWith('deployed') && r.includes('orphan')) &&
			    rows.some((r) => r.startsWith('killed') && r.includes('orphan') && r.includes('state purged')) &&
			    rows.findIndex((r) => r.startsWith('killed')) < rows.findIndex((r) => r.startsWith('deployed')); })()`)
		screenshot(t, ctx, shots, "events")
	})

	t.Run("nodes", func(t *testing.T) {
		goTo(t, ctx, "#/nodes")
		waitJS(t, ctx, "three healthy nodes with their CPU and memory",
			`document.querySelectorAll('#nodes-table tr[data-node]').length === 3 && document.querySelectorAll('#nodes-table .badge.healthy').length === 3 && document.querySelector('#nodes-table').textContent.includes('MiB')`)
		screenshot(t, ctx, shots, "nodes")
	})

	t.Run("fifty operators render in under a second", func(t *testing.T) {
		goTo(t, ctx, "#/graph")
		waitJS(t, ctx, "the graph", `document.querySelector('#graph [data-operator="count"]')`)
		run(t, ctx, "pause the live updates", chromedp.Click(chromedp.CSS("#live-toggle")))
		waitJS(t, ctx, "paused", `document.querySelector('#conn').textContent === 'paused'`)
		// A chain of 50 operators (each reading the previous one's stream),
		// rendered by the page's own code; the time is measured in the
		// page, from the call to the frame after next (painted).
		ms := eval[float64](t, ctx, `(async () => {
			const ops = [], streams = [];
			for (let i = 0; i < 50; i++) {
				ops.push({name: 'op' + i, kind: 'k', state: 'running', instances: 4, inRate: 1000 + i, outRate: 900 + i, queued: i * 40, blocked: (i % 7) / 10,
					inputs: i ? [{stream: 's' + (i - 1), routing: 'shuffle'}] : [], outputs: ['s' + i]});
				streams.push({name: 's' + i, producers: ['op' + i], consumers: i < 49 ? [{operator: 'op' + (i + 1), routing: 'shuffle'}] : [], noConsumer: i === 49});
			}
			const t0 = performance.now();
			window.sluiceConsole.renderGraph({operators: ops, streams: streams});
			const n = document.querySelectorAll('#graph [data-operator]').length;
			await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
			if (n !== 50) throw new Error(n + ' operators rendered, want 50');
			return performance.now() - t0;
		})()`)
		t.Logf("50 operators rendered in %.1f ms (in the page)", ms)
		if ms >= 1000 {
			t.Fatalf("50 operators rendered in %.0f ms, want under 1 s", ms)
		}
		screenshot(t, ctx, shots, "graph-50")
	})

	t.Run("the ad network fits and no edge crosses a node", func(t *testing.T) {
		// The ad network with trending URLs, as at 1400 px it clipped its
		// last operator behind a scroll bar and drew trending → dashboard
		// through the ctr stream: every edge's points (but its ends) are
		// checked against every node's box, and the graph against the
		// page's width.
		problem := eval[string](t, ctx, `(() => {
			const op = (name, inputs, outputs) => ({name, kind: name, state: 'running', instances: 1, inRate: 10, outRate: 10,
				inputs: inputs.map((s) => ({stream: s, routing: 'group-by'})), outputs});
			const ops = [op('impressions', [], ['impressions']), op('clicks', [], ['clicks']),
				op('publisher-counts', ['impressions', 'clicks'], ['publisher-counts']), op('ctr', ['publisher-counts'], ['ctr']),
				op('trending-urls', ['impressions'], ['trending']), op('dashboard', ['ctr', 'trending'], [])];
			const streams = ['impressions', 'clicks', 'publisher-counts', 'ctr', 'trending'].map((s) => ({name: s,
				producers: ops.filter((o) => o.outputs.includes(s)).map((o) => o.name),
				consumers: ops.filter((o) => o.inputs.some((i) => i.stream === s)).map((o) => ({operator: o.name, routing: 'group-by'}))}));
			window.sluiceConsole.renderGraph({operators: ops, streams});
			const wrap = document.querySelector('.graph-wrap');
			if (wrap.scrollWidth > wrap.clientWidth) return 'the graph is ' + wrap.scrollWidth + ' px wide in a page ' + wrap.clientWidth + ' px wide';
			const boxes = [...document.querySelectorAll('#graph g.op, #graph g.stream')].map((g) => {
				const m = /translate\(([-\d.]+),([-\d.]+)\)/.exec(g.getAttribute('transform'));
				const r = g.querySelector('rect');
				return {id: (g.dataset.operator ? 'o:' + g.dataset.operator : 's:' + g.dataset.stream), x: +m[1], y: +m[2], w: +r.getAttribute('width'), h: +r.getAttribute('height')};
			});
			for (const p of document.querySelectorAll('#graph path.edge')) {
				const len = p.getTotalLength();
				for (let i = 1; i < 100; i++) {
					const pt = p.getPointAtLength(len * i / 100);
					for (const b of boxes) {
						if (b.id === p.dataset.from || b.id === p.dataset.to) continue;
						if (pt.x > b.x + 2 && pt.x < b.x + b.w - 2 && pt.y > b.y + 2 && pt.y < b.y + b.h - 2)
							return 'the edge ' + p.dataset.from + ' → ' + p.dataset.to + ' crosses ' + b.id;
					}
				}
			}
			return '';
		})()`)
		screenshot(t, ctx, shots, "graph-adnetwork")
		if problem != "" {
			t.Fatal(problem)
		}
	})

	for _, e := range pageErrors() {
		// The bad manifest's deploy answered 400, as it should; nothing
		// else may fail.
		if !strings.Contains(e, "status of 400") || !strings.Contains(e, "/v1/console/deploy") {
			t.Fatalf("the pages logged an error: %s", e)
		}
	}

	t.Run("dead letters and watermarks", func(t *testing.T) {
		// A node in this process: a watermarked source, an operator that
		// dead-letters its poison record, and a source that finishes.
		rt := testkinds.StartPoisonPipeline(t)
		before := len(pageErrors())
		run(t, ctx, "open picky's page", chromedp.Navigate("http://"+rt.HTTPAddr()+"/ui/#/operator/picky"))
		waitJS(t, ctx, "picky's dead letter with its error header",
			`document.querySelector('#op-dead-letters tr[data-dead-letter]') && document.querySelector('#op-dead-letters').textContent.includes('sluice-errorpoison record 7')`)
		waitJS(t, ctx, "picky's watermark, an event time of ticks", `document.querySelector('#op-table td.wm').textContent.startsWith('2025-06-01 12:')`)
		screenshot(t, ctx, shots, "operator-dead-letters")
		goTo(t, ctx, "#/operator/few")
		waitJS(t, ctx, "few finished", `document.querySelector('#op-table td.wm') && document.querySelector('#op-table td.wm').textContent === 'end of input finished'`)
		if errs := pageErrors()[before:]; len(errs) > 0 {
			t.Fatalf("the pages logged errors: %v", errs)
		}
	})

	t.Run("token prompt", func(t *testing.T) {
		// A node whose control API needs a token (in this process: one
		// node, so no protoactor remotes race here).
		const readToken = "read-0123456789abcdef0123456789a"
		tokens := credstest.TokenFile(t, "admin:admin-0123456789abcdef0123456789", "read:"+readToken)
		rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0",
			Deploy: []string{"count"}, ControlSecurity: &control.Security{TokensFile: tokens}},
			testkinds.Gen(0, 1000, 0, 1), testkinds.CounterFactory(2, false))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Stop(context.Background()) })
		before := len(pageErrors())
		run(t, ctx, "open the secured console", chromedp.Navigate("http://"+rt.HTTPAddr()+"/ui/#/graph"))
		waitJS(t, ctx, "the token prompt", `document.querySelector('#token-dialog').open`)
		run(t, ctx, "give a wrong token", chromedp.SetValue(chromedp.CSS("#token"), "not-a-token-0123456789abcdef"), chromedp.Click(chromedp.CSS("#token-submit")))
		waitJS(t, ctx, "the prompt again, saying why", `document.querySelector('#token-dialog').open && document.querySelector('#token-reason').textContent.includes('not valid')`)
		screenshot(t, ctx, shots, "token")
		run(t, ctx, "give the read token", chromedp.SetValue(chromedp.CSS("#token"), readToken), chromedp.Click(chromedp.CSS("#token-submit")))
		waitJS(t, ctx, "the graph with the token", `!document.querySelector('#token-dialog').open && document.querySelector('#graph [data-operator="count"]')`)
		// An exactly-once node's checkpoints, on an operator's page: a
		// table in the viewer's time, not the JSON with nanoseconds.
		goTo(t, ctx, "#/operator/count")
		waitJS(t, ctx, "count's checkpoints as a table",
			`/^\d+ at \d{1,2}:\d\d:\d\d/.test(document.querySelector('#op-checkpoints [data-field="last"]')?.textContent || '') &&
			 !document.querySelector('#op-detail pre') && !document.querySelector('#op-detail').textContent.includes('lastTime')`)
		screenshot(t, ctx, shots, "checkpoints")
		for _, e := range pageErrors()[before:] {
			// The requests without a valid token fail with 401, as they
			// should; nothing else may.
			if !strings.Contains(e, "401") {
				t.Fatalf("the secured console logged an error: %s", e)
			}
		}
	})
}

// TestConsoleTimelineOfACrash: a node killed does not just vanish from the
// console. In an exactly-once cluster, after n3 is SIGKILLed the console
// of n1 shows on its timeline that n3 was lost (seen by both survivors),
// the rollback the checkpoint coordinator began, and the instances
// restored from the checkpoint.
func TestConsoleTimelineOfACrash(t *testing.T) {
	c := startCluster(t, "-guarantee", "exactly-once", "-checkpoints", filepath.Join(t.TempDir(), "checkpoints"), "-checkpoint-interval", "200ms")
	sluicetest.WaitEvery(t, 60*time.Second, 200*time.Millisecond, "a complete checkpoint", func() bool {
		var st api.ClusterStatus
		return c.get("/v1/status", &st) == 200 && st.Checkpoints != nil && st.Checkpoints.Last != 0
	})
	c.procs[2].Kill()
	ctx, _ := browser(t)
	run(t, ctx, "open n1's timeline", chromedp.Navigate("http://"+c.http[0]+"/ui/#/events"))
	waitJS(t, ctx, "n3 lost, the rollback and the restore on the timeline",
		`(() => { const rows = [...document.querySelectorAll('#events-table tr[data-event]')];
		  const has = (what, ...words) => rows.some((r) => r.dataset.event === what && words.every((w) => r.textContent.includes(w)));
		  return has('node-lost', 'node n3', 'n1', 'n2') && has('rollback', 'n3') && has('restored', 'checkpoint ', 'instances', 'by the rollback') &&
		    !has('member-left', 'node n3'); })()`)
	screenshot(t, ctx, artifacts(t), "events-crash")
	goTo(t, ctx, "#/nodes")
	waitJS(t, ctx, "the loss among the nodes page's recent events", `[...document.querySelectorAll('#nodes-events tr[data-event="node-lost"]')].some((r) => r.textContent.includes('n3'))`)
}
