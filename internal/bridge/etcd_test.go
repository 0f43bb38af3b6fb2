package bridge

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// startRegistry runs a pinned registry binary (built and cached as the
// local cluster's) on loopback for one test, and waits until health
// answers 200: the registry as users have it, no cluster.
func startRegistry(t *testing.T, name, health string, args func(ports []int) []string) string {
	t.Helper()
	ctx := context.Background()
	bin, err := binaries.Binary(ctx, name, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := cluster.FreePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args(ports)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		resp, err := http.Get(endpoint + health)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("%s did not answer: %v", name, err)
	}
	return endpoint
}

func startEtcd(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "etcd")
	return startRegistry(t, "etcd", cluster.EtcdHealth, func(ports []int) []string {
		return cluster.EtcdArgs("registry", dir, ports[0], ports[1])
	})
}

func etcdConfig(endpoint string) EtcdConfig {
	d := func(x time.Duration) metav1.Duration { return metav1.Duration{Duration: x} }
	return EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/services", TTL: d(30 * time.Second),
		DialTimeout: d(5 * time.Second), RequestTimeout: d(5 * time.Second), LeaseKey: "/lifeline-bridge/test/lease"}
}

func TestEtcdRegistryAgainstARealEtcd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := etcdConfig(startEtcd(t))
	e, err := NewEtcd(ctx, cfg, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	inst := Instance{IP: "10.0.0.7", Port: 8080, Pod: "web-abcde", Namespace: "demo", Workload: "web", UID: "uid-1"}
	if err := e.Register(ctx, inst); err != nil {
		t.Fatal(err)
	}
	entries, err := e.Entries(ctx)
	if err != nil || len(entries) != 1 || entries[0].ID != inst.ID() || entries[0].UID != "uid-1" || entries[0].IP != "10.0.0.7" || entries[0].Port != 8080 {
		t.Fatalf("entries %+v (%v), want the one registered", entries, err)
	}
	first := entries[0]

	// A bridge that restarts within the TTL takes its lease back and
	// finds its entries as they were: nothing is written again.
	e.Close()
	again, err := NewEtcd(ctx, cfg, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.Lease() != e.Lease() {
		t.Fatalf("lease %x after a restart, want %x kept", again.Lease(), e.Lease())
	}
	if err := again.Register(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if entries, _ := again.Entries(ctx); len(entries) != 1 || entries[0].Version != first.Version {
		t.Fatalf("registering the same instance again rewrote it: %+v, was version %d", entries, first.Version)
	}

	// A removal planned on an older read leaves a newer write alone.
	moved := inst
	moved.IP, moved.UID = "10.0.0.8", "uid-2"
	if err := again.Register(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if err := again.RemoveIfUnchanged(ctx, first); err != nil {
		t.Fatal(err)
	}
	if entries, _ := again.Entries(ctx); len(entries) != 1 || entries[0].UID != "uid-2" {
		t.Fatalf("a stale removal deleted a newer entry: %+v", entries)
	}
	if err := again.RegisterIfAbsent(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if entries, _ := again.Entries(ctx); len(entries) != 1 || entries[0].UID != "uid-2" {
		t.Fatalf("RegisterIfAbsent overwrote an entry: %+v", entries)
	}
	if err := again.Unregister(ctx, inst.ID()); err != nil {
		t.Fatal(err)
	}
	if entries, _ := again.Entries(ctx); len(entries) != 0 {
		t.Fatalf("entries after Unregister: %+v", entries)
	}
}
