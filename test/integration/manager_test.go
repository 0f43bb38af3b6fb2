package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/metricsauth"
)

// TestManagerServesHealthAndMetricsAndLeads runs the lifeline-manager binary
// against the API server: health and metrics answer, it becomes ready once
// its self-managed webhook certificate serves, it takes the leader lease,
// logs structured JSON, and on SIGTERM exits cleanly and hands the lease back.
func TestManagerServesHealthAndMetricsAndLeads(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "lifeline-manager")
	build := exec.Command("go", "build", "-o", bin, "./cmd/lifeline-manager")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}
	ports, err := cluster.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	names := cluster.WebhookNames{Mutating: "manager-test-mutating", Validating: "manager-test-validating"}
	remove, err := cluster.InstallWebhooks(context.Background(), cfg, filepath.Join(repoRoot, "config", "webhook", "manifests.yaml"), "localhost", ports[2], names)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remove(context.Background()) })
	cmd := exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		"--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", ports[2]),
		"--webhook-cert-dir="+filepath.Join(dir, "certs"),
		"--webhook-cert-secret="+ns+"/webhook-certs", "--webhook-dns-name=localhost",
		"--webhook-mutating-configuration="+names.Mutating, "--webhook-validating-configuration="+names.Validating,
		"--leader-elect=true", "--leader-election-namespace="+ns,
		// This test process serves the CRDs' conversion (serveConversion).
		"--webhook-conversion=false",
	)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var (
		mu    sync.Mutex
		lines []string
	)
	output := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(lines) }
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		scanner := bufio.NewScanner(stderr)
		scanner.Buffer(nil, 1<<20)
		for scanner.Scan() {
			mu.Lock()
			lines = append(lines, scanner.Text())
			mu.Unlock()
		}
	}()
	go func() {
		<-scanned // Wait closes stderr: read it all first
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	for _, path := range []string{"/healthz", "/readyz"} {
		waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d%s", ports[1], path), "ok")
	}
	checkMetricsAuth(t, ns, fmt.Sprintf("https://127.0.0.1:%d/metrics", ports[0]))

	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: ns, Name: "lifeline-manager.lifeline.dev"}
	poll(t, "the leader lease held", func(ctx context.Context) bool {
		return k8s.Get(ctx, key, lease) == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	})

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	term := time.Now()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("manager exited with %v on SIGTERM; its last output:\n%s", err, tail(output(), 400))
		}
		t.Logf("manager exited %v after SIGTERM", time.Since(term).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		// What it is stuck on: the Go runtime prints every goroutine on
		// SIGQUIT.
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
		t.Fatalf("manager did not exit within 30s of SIGTERM; its output is in %s", keepOutput(t, output()))
	}
	if err := k8s.Get(context.Background(), key, lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		t.Errorf("lease still held by %q after shutdown; a successor would wait for it to expire", *lease.Spec.HolderIdentity)
	}

	// Every line the manager logged is a JSON object with a message.
	n := 0
	for _, line := range output() {
		if !strings.HasPrefix(line, "{") {
			continue // klog lines of client-go's leader election
		}
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil || entry["msg"] == nil {
			t.Errorf("unstructured log line: %s", line)
		}
		n++
	}
	if n == 0 {
		t.Error("the manager logged no structured line")
	}
}

// keepOutput writes a failed run's whole output (its logs and the
// goroutine dump) where it outlives the test, and returns the path.
func keepOutput(t *testing.T, lines []string) string {
	f, err := os.CreateTemp("", "lifeline-manager-test-*.log")
	if err != nil {
		return "(not kept: " + err.Error() + ")\n" + tail(lines, 200)
	}
	defer f.Close()
	_, _ = f.WriteString(strings.Join(lines, "\n"))
	return f.Name()
}

// tail is the last n lines, joined.
func tail(lines []string, n int) string {
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func waitHTTP(t *testing.T, url, want string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		last = fmt.Sprintf("%d %.200s", resp.StatusCode, body)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), want), nil
	})
	if err != nil {
		t.Fatalf("GET %s never answered 200 with %q: %v; last answer: %s", url, want, err, last)
	}
}

// checkMetricsAuth: metrics are served over HTTPS only to a caller whose
// token the API server authenticates and whose user may get /metrics:
// 401 without a token, 403 for a service account without the reader
// role, the metrics for one bound to it (config/rbac).
func checkMetricsAuth(t *testing.T, ns, url string) {
	t.Helper()
	ctx := context.Background()
	apply := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-f", filepath.Join(repoRoot, "config", "rbac", "metrics_reader_role.yaml"))
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("applying the metrics reader role: %v\n%s", err, out)
	}
	reader, err := cluster.ServiceAccountToken(ctx, cfg, ns, "scraper", metricsauth.ReaderRole)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := cluster.ServiceAccountToken(ctx, cfg, ns, "stranger", "")
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, c := range []struct {
		token string
		code  int
	}{{"", http.StatusUnauthorized}, {stranger, http.StatusForbidden}, {reader, http.StatusOK}} {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			resp, err := cluster.NewScraper(c.token).Get(url)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			last = fmt.Sprintf("%d %.200s", resp.StatusCode, body)
			return resp.StatusCode == c.code && (c.code != http.StatusOK || strings.Contains(string(body), "leader_election_master_status")), nil
		})
		if err != nil {
			t.Fatalf("GET %s never answered %d: %v; last answer: %s", url, c.code, err, last)
		}
	}
}

func poll(t *testing.T, what string, cond func(ctx context.Context) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return cond(ctx), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
