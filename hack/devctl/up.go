package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// up is make dev: a local cluster with the CRDs installed, the manager
// running against it and the seed scenario applied, kept up until
// interrupted and then torn down whole.
func up(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	nodes := fs.Int("nodes", 3, "number of simulated nodes")
	realNodes := fs.Int("real-nodes", 2, "number of real nodes (a kubelet and containerd each, running real containers; needs root, installs Debian's containerd and runc the first time)")
	profile := fs.String("profile", string(cluster.Realistic), "how long the simulated kubelets take: realistic (pods start in about 1 s, in-place restarts take 1 s, termination 2 s, so make demo's steps take visible time) or instant")
	devDir := fs.String("dir", "", "folder for the kubeconfig, the ready marker and the cluster (default .dev in the repository)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	if *devDir == "" {
		*devDir = filepath.Join(root, ".dev")
	}
	if p := cluster.Profile(*profile); p != cluster.Realistic && p != cluster.Instant {
		return fmt.Errorf("-profile %q: want realistic or instant", *profile)
	}
	return serve(ctx, root, *devDir, *nodes, *realNodes, cluster.Profile(*profile))
}

func serve(ctx context.Context, root, devDir string, nodes, realNodes int, profile cluster.Profile) error {
	ready := filepath.Join(devDir, "ready")
	_ = os.Remove(ready)
	// Each run starts from a clean cluster folder: the previous run's
	// etcd data and certificates belong to processes that are gone.
	if err := os.RemoveAll(filepath.Join(devDir, "cluster")); err != nil {
		return err
	}
	if err := os.MkdirAll(devDir, 0o755); err != nil {
		return err
	}

	opts := cluster.Options{Dir: filepath.Join(devDir, "cluster"), Nodes: nodes, RealNodes: realNodes, Profile: profile, Progress: os.Stdout}
	if err := cluster.Preflight(opts); err != nil {
		return fmt.Errorf("make dev cannot start:\n%w", err)
	}
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping the local cluster")
		c.Stop()
		_ = os.Remove(ready)
	}()

	fmt.Println("installing CRDs")
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfPathMissing: true,
	}); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	fmt.Println("building and starting lifeline-manager")
	manager, err := c.StartLifeline(ctx, cluster.LifelineOptions{Root: root, Dir: devDir})
	if err != nil {
		return err
	}
	kubectl := c.Binaries["kubectl"]
	fmt.Println("applying the seed scenario (config/samples)")
	apply := exec.CommandContext(ctx, kubectl, "--kubeconfig", c.Kubeconfig, "apply", "-f", filepath.Join(root, "config", "samples"))
	apply.Stdout, apply.Stderr = os.Stdout, os.Stderr
	if err := apply.Run(); err != nil {
		return fmt.Errorf("applying samples: %w", err)
	}

	if realNodes > 0 {
		fmt.Println("applying the real-node demo (namespace demo-real)")
		apply := exec.CommandContext(ctx, kubectl, "--kubeconfig", c.Kubeconfig, "apply", "-f", "-")
		apply.Stdin = strings.NewReader(realNodeDemo(c))
		apply.Stdout, apply.Stderr = os.Stdout, os.Stderr
		if err := apply.Run(); err != nil {
			return fmt.Errorf("applying the real-node demo: %w", err)
		}
	}

	registry, bridge, err := startRegistryBridge(ctx, c, root, devDir)
	if err != nil {
		return err
	}
	// What make dashboard scrapes: each process's metrics endpoint.
	targets := fmt.Sprintf("lifeline-manager %s\nlifeline-bridge %s\n", manager.MetricsURL, bridge.MetricsURL)
	if err := os.WriteFile(filepath.Join(devDir, "metrics-targets"), []byte(targets), 0o644); err != nil {
		return err
	}

	kubeconfig := filepath.Join(devDir, "kubeconfig")
	if err := copyFile(c.Kubeconfig, kubeconfig); err != nil {
		return err
	}
	fmt.Printf(`
Lifeline's local cluster is up. Press Ctrl-C to stop it.

  kubeconfig: %[1]s
  logs:       %[3]s

Try:
  export KUBECONFIG=%[1]s
  alias kubectl=%[2]s
  kubectl get nodes -o wide -L topology.kubernetes.io/zone
  kubectl -n demo-real get clone,pods -o wide   # real containers on the real nodes
  kubectl -n demo get clonesets
  kubectl -n demo get clone cloneset-lifecycle-demo -o yaml
  kubectl -n demo get asts
  kubectl get crd | grep kruise.io

The seeds' service registry is an etcd at %[4]s (also in
%[5]s); lifeline-bridge keeps it in step with the demo pods:
  make registry   # the demo pods' lifecycle states next to their registry entries
  make demo       # scale up, update in place (a CloneSet, an Advanced StatefulSet), ReCreate, scale down: each step's timeline
  kubectl lifeline status clone/cloneset-lifecycle-demo -n demo   # after make plugin: why a rollout waits
`, kubeconfig, kubectl, filepath.Join(c.Dir, "logs"), registry.Endpoint, filepath.Join(devDir, "registry-endpoint"))
	// Ready once the message is out: whoever waits for the file (make
	// test's TestMakeDevComesUpAndTearsDownWhole) reads it next.
	if err := os.WriteFile(ready, []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return err
	}

	// Stay up until interrupted, or until a component dies: a cluster
	// missing a component is not worth keeping up silently.
	err = wait.PollUntilContextCancel(ctx, time.Second, false, func(context.Context) (bool, error) {
		return false, c.Exited()
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}

// startRegistryBridge runs the seeds' service-discovery centre (an etcd of
// its own, its endpoint written to registry-endpoint) and lifeline-bridge
// against it for the demo namespace.
func startRegistryBridge(ctx context.Context, c *cluster.Cluster, root, devDir string) (*cluster.Registry, *cluster.Bridge, error) {
	fmt.Println("starting the service registry (etcd) and lifeline-bridge")
	registry, err := c.StartEtcdRegistry(ctx, "registry")
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(devDir, "registry-endpoint"), []byte(registry.Endpoint+"\n"), 0o644); err != nil {
		return nil, nil, err
	}
	config := filepath.Join(devDir, "bridge.yaml")
	text := fmt.Sprintf("# lifeline-bridge for make dev: every CloneSet and Advanced StatefulSet of the demo namespace.\n"+
		"name: registry\nnamespace: demo\nworkloads: [{kind: CloneSet}, {kind: StatefulSet}, {kind: DaemonSet}]\nport: 80\ntimeout: 1m\netcd: {endpoints: [%q], prefix: /services}\n", registry.Endpoint)
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		return nil, nil, err
	}
	bridge, err := c.StartBridge(ctx, cluster.BridgeOptions{Root: root, Dir: devDir, Config: config})
	if err != nil {
		return nil, nil, err
	}
	return registry, bridge, nil
}

// realNodeDemo is an in-place CloneSet of the test application on the real
// nodes: its pods run real containers (an exec readiness probe, a preStop
// hook), so an image change restarts one container in place:
//
//	kubectl -n demo-real patch clone realnode-demo --type=json \
//	  -p '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"lifeline.test/testapp:v2"}]'
//
// Each container logs its life to the cluster's events folder.
func realNodeDemo(c *cluster.Cluster) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: demo-real
---
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  namespace: demo-real
  name: realnode-demo
spec:
  replicas: 2
  selector:
    matchLabels: {app: realnode-demo}
  updateStrategy:
    type: InPlaceIfPossible
    maxUnavailable: 1
  template:
    metadata:
      labels: {app: realnode-demo}
    spec:
      nodeSelector: {%[1]s: "true"}
      tolerations: [{key: %[2]s, operator: Equal, value: %[3]q, effect: %[4]s}]
      terminationGracePeriodSeconds: 10
      containers:
      - name: app
        image: %[5]s
        imagePullPolicy: Never
        env:
        - {name: EVENTS_DIR, value: /events}
        - {name: CONTAINER_NAME, value: app}
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        readinessProbe:
          exec: {command: [/testapp, probe]}
          periodSeconds: 1
        lifecycle:
          preStop:
            exec: {command: [/testapp, prestop]}
        volumeMounts: [{name: events, mountPath: /events}]
      volumes:
      - name: events
        hostPath: {path: %[6]s}
`, cluster.RealNodeLabel, cluster.RealNodeTaint.Key, cluster.RealNodeTaint.Value, cluster.RealNodeTaint.Effect,
		cluster.TestAppImage("v1"), c.EventsDir())
}
