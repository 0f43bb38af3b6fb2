package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// The images make images writes hold their program and nothing else (no
// shell, nothing to exec into), run as a non-root user, name their source
// revision, and their programs work against the cluster: the manager,
// unpacked from its image, serves admission requests as a second replica;
// the bridge, unpacked from its image, keeps a registry in step.
func TestImages(t *testing.T) {
	ctx := context.Background()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	paths, err := cluster.BuildImages(ctx, cluster.ImageOptions{Root: root, Out: out, Tag: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{}
	for i, image := range cluster.Images {
		dir := filepath.Join(out, image)
		cf, err := cluster.UnpackImage(paths[i], dir)
		if err != nil {
			t.Fatal(err)
		}
		if cf.Config.User != cluster.ImageUser || cf.Config.User == "" || cf.Config.User == "0" || cf.Config.User == "root" {
			t.Errorf("%s runs as %q, want the non-root %s", image, cf.Config.User, cluster.ImageUser)
		}
		if want := []string{"/" + image}; !slices.Equal(cf.Config.Entrypoint, want) || len(cf.Config.Cmd) != 0 {
			t.Errorf("%s: entrypoint %v cmd %v, want %v alone", image, cf.Config.Entrypoint, cf.Config.Cmd, want)
		}
		if cf.Config.Labels["org.opencontainers.image.revision"] == "" || cf.Config.Labels["org.opencontainers.image.source"] == "" {
			t.Errorf("%s: labels %v name no source revision", image, cf.Config.Labels)
		}
		var files []string
		if err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			rel, _ := filepath.Rel(dir, path)
			if rel != "." {
				files = append(files, rel)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if want := []string{image, "tmp"}; !slices.Equal(files, want) {
			t.Errorf("%s holds %v, want only %v (no shell, no tools)", image, files, want)
		}
		bins[image] = filepath.Join(dir, image)
	}

	t.Run("the manager from its image serves admissions as a second replica", func(t *testing.T) {
		replicas, err := local.StartReplicaFrom(ctx, lifeline, bins["lifeline-manager"])
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := replicas.Stop(context.Background(), local); err != nil {
				t.Error(err)
			}
		}()
		ns := newNamespace(t)
		create(t, kruiseDeployment(ns, "web", 4))
		waitRunning(t, ns, "app=web", 4)
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if err := client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("deleting %s: %v", p.Name, err)
			}
		}
		if replicas.Served[1].Load() == 0 {
			t.Errorf("the replica from the image served no admission request (%d to the first)", replicas.Served[0].Load())
		}
		if n := metricAt(replicas.Second.MetricsURL, "controller_runtime_webhook_requests_total", map[string]string{"webhook": "/validate-pod"}); n <= 0 {
			t.Errorf("the replica from the image counts %v pod validations in its metrics", n)
		}
	})

	t.Run("the bridge from its image keeps a registry in step", func(t *testing.T) {
		r := etcdUnderTest(t, "image-registry-etcd")
		ns := newNamespace(t)
		config := etcdBridgeConfig(t, "image", "enabled", ns, r.registry.Endpoint)
		b, err := local.StartBridge(ctx, cluster.BridgeOptions{Root: root, Dir: local.Dir, Config: config, Name: "lifeline-bridge-image", Bin: bins["lifeline-bridge"]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = local.StopProcess(b.Name, syscall.SIGTERM) })
		cs := newCloneSet(ns, "web", 2)
		cs.Labels = map[string]string{"registry": "enabled"}
		withRegistryHooks(cs)
		createCloneSet(t, cs)
		waitCloneSet(t, cs, "2 pods registered and available", settled(2))
		waitEntries(t, r.etcd, cs, 2)
		eventually(t, 30*time.Second, "the bridge's metrics", func(context.Context) (bool, string, error) {
			n := metricAt(b.MetricsURL, "lifeline_bridge_entries", map[string]string{"bridge": "image"})
			return n == 2, fmt.Sprintf("%v entries", n), nil
		})
	})
}
