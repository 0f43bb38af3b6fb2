// Package dev runs what `make dev` runs, on a cluster of its own. It is a
// package apart from test/e2e so that go test runs it beside e2e's cluster
// rather than in e2e's line of tests: it shares nothing with them, and in
// e2e it was 100-200 s of make test's longest package (issue 45).
package dev

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/test/testenv"
)

// TestMakeDevComesUpAndTearsDownWhole runs what `make dev` runs, in a folder
// of its own: it must write the kubeconfig and the ready marker, serve the
// demo, and on Ctrl-C stop every process it started.
func TestMakeDevComesUpAndTearsDownWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	devctl := filepath.Join(dir, "devctl")
	if err := cluster.BuildCommand(context.Background(), root, devctl, "./hack/devctl"); err != nil {
		t.Fatal(err)
	}
	devDir := filepath.Join(dir, "dev")
	out, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(devctl, "up", "--dir", devDir)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// A test that failed leaves devctl running: Ctrl-C tears its
		// cluster down whole, where a kill left mounts and network
		// namespaces behind (11-29). An exited devctl refuses the signal.
		if cmd.Process.Signal(syscall.SIGINT) != nil {
			return
		}
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
		}
	})

	// Alone it is ready in about a minute and a half; in make test it
	// builds the manager, the bridge and the node agent beside e2e's and
	// chaos's clusters, and took 3 min 10 s once (11-29). How fast make dev
	// is on a machine of its own is make first-run's to say, not this test's.
	eventually(t, 5*time.Minute, "make dev ready", func(context.Context) (bool, string, error) {
		select {
		case err := <-exited:
			return false, "", fmt.Errorf("devctl up exited early: %v\n%s%s", err, readFile(out.Name()), exitedLogs(devDir))
		default:
		}
		_, err := os.Stat(filepath.Join(devDir, "ready"))
		return err == nil, readFile(out.Name()), nil
	})
	printed := readFile(out.Name())
	kubeconfig := filepath.Join(devDir, "kubeconfig")
	if !strings.Contains(printed, "kubeconfig: "+kubeconfig) {
		t.Errorf("the kubeconfig path is not printed:\n%s", printed)
	}
	kubectl, err := binaries.Binary(context.Background(), "kubectl", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", "demo", "get", "clone", "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl against the dev cluster: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), "cloneset.apps.kruise.io/cloneset-lifecycle-demo") {
		t.Errorf("the demo CloneSet is missing: %s", got)
	}
	// The manager's webhooks, on their self-managed certificate, defaulted
	// the demo, and its controller runs it. kubectl reads v1beta1, the
	// stored version, where the partition is under rollingUpdate.
	eventually(t, time.Minute, "the demo CloneSet defaulted and reconciled", func(context.Context) (bool, string, error) {
		got, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", "demo", "get", "clone", "cloneset-lifecycle-demo",
			"-o", "jsonpath={.spec.updateStrategy.rollingUpdate.partition} {.spec.revisionHistoryLimit} {.status.observedGeneration} {.status.availableReplicas}").CombinedOutput()
		return err == nil && string(got) == "0 10 1 2", fmt.Sprintf("partition, revisionHistoryLimit, observedGeneration, availableReplicas: %q %v", got, err), nil
	})
	// The volumes demo's claims are provisioned and bound, so its pods run.
	eventually(t, time.Minute, "the volumes demo available on bound claims", func(context.Context) (bool, string, error) {
		avail, err1 := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", "demo", "get", "clone", "cloneset-volumes-demo",
			"-o", "jsonpath={.status.availableReplicas}").CombinedOutput()
		claims, err2 := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", "demo", "get", "pvc", "-l", "app=volumes-demo",
			"-o", "jsonpath={.items[*].status.phase}").CombinedOutput()
		return err1 == nil && err2 == nil && string(avail) == "2" && string(claims) == "Bound Bound",
			fmt.Sprintf("available %q, claims %q", avail, claims), nil
	})
	// Seed 001's scenario on an Advanced StatefulSet runs too, its pods
	// registered by the same bridge (make demo below checks the registry).
	eventually(t, time.Minute, "the Advanced StatefulSet demo available", func(context.Context) (bool, string, error) {
		got, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", "demo", "get", "asts", "statefulset-lifecycle-demo",
			"-o", "jsonpath={.status.availableReplicas}").CombinedOutput()
		return err == nil && string(got) == "2", fmt.Sprintf("available %q %v", got, err), nil
	})
	// So does the node agent on an Advanced DaemonSet, a pod on each node.
	eventually(t, time.Minute, "the Advanced DaemonSet demo on every node", func(context.Context) (bool, string, error) {
		got, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", "demo", "get", "ads", "daemonset-node-agent-demo",
			"-o", "jsonpath={.status.desiredNumberScheduled} {.status.numberAvailable}").CombinedOutput()
		f := strings.Fields(string(got))
		return err == nil && len(f) == 2 && f[0] != "0" && f[0] == f[1], fmt.Sprintf("desired and available %q %v", got, err), nil
	})
	// Real nodes beside kwok's: a kubelet of the pinned version on
	// containerd, and the real-node demo's pods running there.
	wide, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "get", "nodes", "-o", "wide", "--no-headers").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get nodes: %v\n%s", err, wide)
	}
	realNodes := 0
	for _, line := range strings.Split(strings.TrimSpace(string(wide)), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "real-node-") {
			realNodes++
			if !strings.Contains(line, " Ready ") || !strings.Contains(line, "v1.36.3") || !strings.Contains(line, "containerd://1.6.20") {
				t.Errorf("real node line %q: want Ready, kubelet v1.36.3, containerd://1.6.20", line)
			}
		}
	}
	if realNodes != 2 {
		t.Errorf("%d real nodes, want 2:\n%s", realNodes, wide)
	}
	t.Logf("kubectl get nodes -o wide:\n%s", wide)
	eventually(t, 2*time.Minute, "the real-node demo available on real containers", func(context.Context) (bool, string, error) {
		got, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", "demo-real", "get", "pods", "-l", "app=realnode-demo",
			"-o", "jsonpath={range .items[*]}{.spec.nodeName} {.status.containerStatuses[0].ready} {.status.containerStatuses[0].containerID}{\"\\n\"}{end}").CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(got)), "\n")
		ok := err == nil && len(lines) == 2
		for _, l := range lines {
			f := strings.Fields(l)
			ok = ok && len(f) == 3 && strings.HasPrefix(f[0], "real-node-") && f[1] == "true" && strings.HasPrefix(f[2], "containerd://")
		}
		return ok, fmt.Sprintf("%q %v", got, err), nil
	})
	bad := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", "demo", "patch", "clone", "cloneset-lifecycle-demo",
		"--type=merge", "-p", `{"spec":{"updateStrategy":{"type":"OnDelete"}}}`)
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'") {
		t.Errorf("an invalid update got through the dev cluster's webhook: %v\n%s", err, out)
	}

	// The seeds' registry runs, the bridge keeps it in step, and make demo
	// walks the scenario with the registry shown at each step: after each,
	// every demo pod is Normal, Ready and registered, nothing gone is left.
	if endpoint := strings.TrimSpace(readFile(filepath.Join(devDir, "registry-endpoint"))); !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Errorf("registry-endpoint: %q", endpoint)
	}
	demo := exec.Command(devctl, "demo", "--dir", devDir)
	demo.Dir = root
	shown, err := demo.CombinedOutput()
	if err != nil {
		t.Fatalf("devctl demo: %v\n%s", err, shown)
	}
	steps := strings.Split(string(shown), "\n== step ")
	if len(steps) != 7 {
		t.Fatalf("devctl demo showed %d steps, want 6:\n%s", len(steps)-1, shown)
	}
	for i, step := range steps[1:] {
		title := strings.SplitN(step, "\n", 2)[0]
		timeline, rest, ok1 := strings.Cut(step, "-- kubectl lifeline status ")
		status, table, ok2 := strings.Cut(rest, "-- pods and registry\n")
		if !ok1 || !ok2 {
			t.Fatalf("step %q lacks its timeline, status or table:\n%s", title, step)
		}
		if !strings.Contains(timeline, "every entry was written for a Ready pod") {
			t.Errorf("step %q: the registry held an unready pod, or the timeline says nothing of it:\n%s", title, timeline)
		}
		if !strings.Contains(status, "successfully rolled out") {
			t.Errorf("step %q: the status view after it:\n%s", title, status)
		}
		for _, line := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
			if f := strings.Fields(line); len(f) < 5 || f[1] != "Normal" || f[2] != "true" || !strings.Contains(line, " at "+f[3]) {
				t.Errorf("after step %q: %q is not Normal, Ready and registered at its revision", title, line)
			}
		}
		// The in-place step shows a pod's whole journey, in order, and its
		// registry entry going and coming back (the registry's watch is a
		// stream of its own, so only its lines' presence is judged).
		if i == 1 {
			checkJourney(t, timeline)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("devctl up exited with %v after Ctrl-C:\n%s", err, readFile(out.Name()))
		}
	case <-time.After(time.Minute):
		t.Fatal("devctl up still running a minute after Ctrl-C")
	}
	if _, err := os.Stat(filepath.Join(devDir, "ready")); !os.IsNotExist(err) {
		t.Errorf("the ready marker outlived the cluster: %v", err)
	}
	if left := processesMentioning(t, devDir); len(left) > 0 {
		t.Errorf("processes left behind:\n%s", strings.Join(left, "\n"))
	}
}

// processesMentioning lists the command lines that contain s.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), s) {
			continue
		}
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// checkJourney finds the first pod the in-place step picks and checks that
// the timeline shows its states and readiness in order, and its entry
// leaving and coming back to the registry.
func checkJourney(t *testing.T, timeline string) {
	t.Helper()
	var pod string
	var steps []string
	for _, line := range strings.Split(timeline, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != "pod" {
			continue
		}
		if pod == "" && strings.HasSuffix(line, "Normal → PreparingUpdate") {
			pod = f[2]
		}
		if f[2] == pod {
			steps = append(steps, strings.Join(f[3:], " "))
		}
	}
	// The controller writes the states and the kubelet the readiness: each
	// is in order on its own, and the pod is out of service (NotReady)
	// before it is Normal again.
	var states, ready []string
	for _, s := range steps {
		if strings.HasPrefix(s, "Ready ") {
			ready = append(ready, s)
		} else {
			states = append(states, s)
		}
	}
	wantStates := []string{"Normal → PreparingUpdate", "PreparingUpdate → Updating", "Updating → Updated", "Updated → Normal"}
	wantReady := []string{"Ready true → false", "Ready false → true"}
	if strings.Join(states, "; ") != strings.Join(wantStates, "; ") || strings.Join(ready, "; ") != strings.Join(wantReady, "; ") ||
		slices.Index(steps, "Ready true → false") > slices.Index(steps, "Updated → Normal") {
		t.Errorf("pod %s's journey: %q, want the states %q, and %q before it is Normal again\n%s", pod, steps, wantStates, wantReady, timeline)
	}
	for _, entry := range []string{"− " + pod, "+ " + pod + " ("} {
		if !strings.Contains(timeline, entry) {
			t.Errorf("the timeline lacks the registry line %q\n%s", entry, timeline)
		}
	}
}

// exitedLogs is the end of the log a devctl error names ("(log: PATH)"),
// which goes with the test's folder.
func exitedLogs(devDir string) string {
	matches, _ := filepath.Glob(filepath.Join(devDir, "cluster", "logs", "*.log"))
	var out strings.Builder
	for _, m := range matches {
		lines := strings.Split(strings.TrimSpace(readFile(m)), "\n")
		fmt.Fprintf(&out, "\n--- end of %s:\n%s", filepath.Base(m), strings.Join(lines[max(0, len(lines)-5):], "\n"))
	}
	return out.String()
}

// eventually polls cond until it holds or the timeout passes (no cluster of
// the test's own to watch: devctl's exit is cond's to report).
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	testenv.Eventually(t, nil, timeout, what, cond)
}
