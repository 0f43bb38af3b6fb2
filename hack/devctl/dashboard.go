package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// dashboard is make dashboard: with make dev running, a Prometheus built
// from its pinned module scrapes the manager and the bridge while the demo
// runs, then every query of the Grafana dashboard is evaluated against it
// and printed with what it returned: the dashboard's data, rendered as
// text (Grafana itself cannot be built here; see docs/kubectl-plugin.md).
func dashboard(ctx context.Context, args []string) error {
	env, err := openDev(args, "dashboard")
	if err != nil {
		return err
	}
	defer env.etcd.Close()
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	prom, err := startPrometheus(ctx, env.dir)
	if err != nil {
		return err
	}
	defer prom.stop()
	fmt.Fprintf(env.out, "Prometheus at %s scrapes the manager and the bridge every 2 s; running make demo\n", prom.url)
	if err := prom.waitUp(ctx, 2); err != nil {
		return err
	}
	if err := demo(ctx, args); err != nil {
		return err
	}
	// One more scrape after the demo, so its last step is in the data.
	if err := prom.waitScrapeAfter(ctx, time.Now()); err != nil {
		return err
	}
	return prom.render(ctx, filepath.Join(root, "config", "grafana", "lifeline.json"), env)
}

type prometheus struct {
	url string
	cmd *exec.Cmd
}

func startPrometheus(ctx context.Context, devDir string) (*prometheus, error) {
	bin, err := binaries.Binary(ctx, "prometheus", os.Stderr)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(devDir, "kubeconfig"))
	if err != nil {
		return nil, err
	}
	token, err := cluster.ServiceAccountToken(ctx, cfg, cluster.ManagerNamespace, "metrics-scraper", "lifeline-metrics-reader")
	if err != nil {
		return nil, err
	}
	targets, err := os.ReadFile(filepath.Join(devDir, "metrics-targets"))
	if err != nil {
		return nil, fmt.Errorf("%w (restart make dev: it writes the metrics targets)", err)
	}
	dir := filepath.Join(devDir, "prometheus")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600); err != nil {
		return nil, err
	}
	config := "global: {scrape_interval: 2s}\nscrape_configs:\n"
	for _, line := range strings.Split(strings.TrimSpace(string(targets)), "\n") {
		job, target, _ := strings.Cut(line, " ")
		u, err := url.Parse(target)
		if err != nil {
			return nil, err
		}
		config += fmt.Sprintf("- job_name: %s\n  scheme: https\n  metrics_path: %s\n  authorization: {credentials_file: %s}\n  tls_config: {insecure_skip_verify: true}\n  static_configs: [{targets: [%q]}]\n",
			job, u.Path, filepath.Join(dir, "token"), u.Host)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &prometheus{url: "http://" + addr, cmd: cmd}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("prometheus not ready (log in %s): %w", log.Name(), err)
	}
	return p, nil
}

func (p *prometheus) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	_ = p.cmd.Wait()
}

// series is one result of an instant query.
type series struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (p *prometheus) query(ctx context.Context, q string) ([]series, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status, Error string
		Data          struct{ Result []series }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s: %s", q, body.Error)
	}
	return body.Data.Result, nil
}

// waitUp waits until n targets answer their scrapes.
func (p *prometheus) waitUp(ctx context.Context, n int) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := p.query(ctx, "up == 1")
		if err != nil {
			return false, err
		}
		last = fmt.Sprint(s)
		return len(s) == n, nil
	})
	if err != nil {
		return fmt.Errorf("scrape targets not up (%s): %w", last, err)
	}
	return nil
}

// waitScrapeAfter waits until every target was scraped after t.
func (p *prometheus) waitScrapeAfter(ctx context.Context, t time.Time) error {
	return wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := p.query(ctx, fmt.Sprintf("min(timestamp(up)) > %d", t.Unix()))
		return err == nil && len(s) == 1, err
	})
}

// render evaluates every query of the dashboard over the last ten minutes
// (the demo's span) and prints, per panel, what each returned.
func (p *prometheus) render(ctx context.Context, file string, env *devEnv) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var dash struct {
		Panels []struct {
			Type, Title string
			Targets     []struct{ Expr, LegendFormat string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		return err
	}
	fmt.Fprintf(env.out, "\n== the dashboard's queries, evaluated over the demo (%s)\n", file)
	w := tabwriter.NewWriter(env.out, 0, 4, 2, ' ', 0)
	empty := 0
	for _, panel := range dash.Panels {
		if panel.Type == "row" {
			fmt.Fprintf(w, "\n%s\t\t\n", strings.ToUpper(panel.Title))
			continue
		}
		fmt.Fprintf(w, "%s\t\t\n", panel.Title)
		for _, t := range panel.Targets {
			// The demo's ten minutes stand for Grafana's rate interval,
			// so rates and quantiles cover every step.
			q := strings.NewReplacer("$__rate_interval", "10m", "$namespace", ".*").Replace(t.Expr)
			s, err := p.query(ctx, q)
			if err != nil {
				return err
			}
			if len(s) == 0 {
				empty++
			}
			fmt.Fprintf(w, "  %s\t%d series\t%s\n", t.LegendFormat, len(s), sample(s, t.LegendFormat))
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(env.out, "\n%d queries returned no series\n", empty)
	return nil
}

// sample shows up to three series of a result by their legend.
func sample(s []series, legend string) string {
	var out []string
	for i, r := range s {
		if i == 3 {
			out = append(out, fmt.Sprintf("(+%d)", len(s)-3))
			break
		}
		name := legend
		for k, v := range r.Metric {
			name = strings.ReplaceAll(name, "{{"+k+"}}", v)
		}
		out = append(out, fmt.Sprintf("%s=%v", name, r.Value[1]))
	}
	return strings.Join(out, "  ")
}
