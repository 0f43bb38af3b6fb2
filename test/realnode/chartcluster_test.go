package realnode

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// chartCluster is a cluster of three kwok nodes and two real ones for the
// chart's tests, with the repository's root, a client and helm.
type chartCluster struct {
	*cluster.Cluster
	root   string
	cfg    *rest.Config
	client kubernetes.Interface
	helm   string
}

// startChartCluster starts it, with a client at qps (the test's own reads
// must not be what is slow); at the test's end it dumps the chart's pods
// if the test failed, stops, and fails the test on what tear-down left.
func startChartCluster(t *testing.T, qps float32) *chartCluster {
	t.Helper()
	ctx := context.Background()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(ctx, cluster.Options{Dir: clusterDir(t), Nodes: 3, RealNodes: 2, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = qps, int(2*qps)
	cc := &chartCluster{Cluster: c, root: root, cfg: cfg, client: kubernetes.NewForConfigOrDie(cfg)}
	t.Cleanup(func() {
		if t.Failed() {
			dumpPods(t, cc.client, chartNamespace)
		}
		c.Stop()
		for _, err := range c.StopErrors() {
			t.Errorf("tear-down: %v", err)
		}
	})
	if cc.helm, err = binaries.Binary(ctx, "helm", nil); err != nil {
		t.Fatal(err)
	}
	return cc
}

// run runs a command from the repository's root against the cluster and
// returns its output, failing the test if it fails.
func (cc *chartCluster) run(t *testing.T, what, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = cc.root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cc.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	return string(out)
}

// loadImages builds the chart's images and loads them into the real
// nodes' runtimes, returning how long each took.
func (cc *chartCluster) loadImages(t *testing.T) (built, loaded time.Duration) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	images, err := cluster.BuildImages(ctx, cluster.ImageOptions{Root: cc.root, Out: t.TempDir(), Tag: "chart-test"})
	if err != nil {
		t.Fatal(err)
	}
	built = time.Since(start)
	if err := cc.ImportImages(ctx, images...); err != nil {
		t.Fatal(err)
	}
	return built, time.Since(start) - built
}
