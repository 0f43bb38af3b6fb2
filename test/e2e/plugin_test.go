package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// The plugin's views as -o json prints them: the fields the tests judge.
type pluginStatus struct {
	Done     bool   `json:"done"`
	Summary  string `json:"summary"`
	Blockers []struct {
		Pod, Reason, Message, Remedy string
	} `json:"blockers"`
	Progress struct {
		Updated int32 `json:"updated"`
		Paused  bool  `json:"paused"`
	} `json:"progress"`
}

var buildPlugin = sync.OnceValues(func() (string, error) {
	root, err := binaries.RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(local.Dir, "plugin")
	// Built in its own module, as go install builds it; the workspace
	// there points it at this repository's API and library modules.
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-lifeline"), ".")
	build.Dir = filepath.Join(root, "cmd", "kubectl-lifeline")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kubectl-lifeline: %v\n%s", err, out)
	}
	return dir, nil
})

// kubectlLifeline runs `kubectl lifeline args...` in ns through kubectl's
// own plugin lookup (the plugin is on PATH), as a user runs it, and
// returns its output; it fails the test when the command fails unless
// mayFail.
func kubectlLifeline(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := runPlugin(t, ns, args...)
	if err != nil {
		t.Fatalf("kubectl lifeline %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func runPlugin(t *testing.T, ns string, args ...string) (string, error) {
	t.Helper()
	dir, err := buildPlugin()
	if err != nil {
		t.Fatal(err)
	}
	// kubectl takes no flags before a plugin's name: the kubeconfig comes
	// from KUBECONFIG, as most users' does.
	cmd := exec.Command(local.Binaries["kubectl"], append([]string{"lifeline", "-n", ns}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+local.Kubeconfig)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

func pluginStatusOf(t *testing.T, ns, ref string) pluginStatus {
	t.Helper()
	var s pluginStatus
	out := kubectlLifeline(t, ns, "status", ref, "-o", "json")
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	return s
}

// blockerFor waits until the status view names pod as holding the rollout
// up for reason, and returns its line.
func blockerFor(t *testing.T, ns, ref, pod, reason string) (message, remedy string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("status names pod %s as %s", pod, reason), func(context.Context) (bool, string, error) {
		s := pluginStatusOf(t, ns, ref)
		for _, b := range s.Blockers {
			if b.Pod == pod && b.Reason == reason {
				message, remedy = b.Message, b.Remedy
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%+v", s), nil
	})
	return message, remedy
}

// byHand runs the by-hand remedy the view suggests: the kubectl commands
// after "by hand: ", joined by &&.
func byHand(t *testing.T, remedy string) {
	t.Helper()
	_, cmds, ok := strings.Cut(remedy, "by hand: ")
	if !ok {
		t.Fatalf("remedy %q gives no command", remedy)
	}
	for _, c := range strings.Split(cmds, " && ") {
		args := strings.Fields(c)
		if len(args) == 0 || args[0] != "kubectl" {
			t.Fatalf("remedy command %q is not a kubectl command", c)
		}
		run := exec.Command(local.Binaries["kubectl"], append([]string{"--kubeconfig", local.Kubeconfig}, args[1:]...)...)
		if out, err := run.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
}

func mustContain(t *testing.T, what, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("%s lacks %q:\n%s", what, p, text)
		}
	}
}

// rolledOut waits with `kubectl lifeline rollout status` itself.
func rolledOut(t *testing.T, ns, ref string) {
	t.Helper()
	out := kubectlLifeline(t, ns, "rollout", "status", ref, "--timeout", "2m")
	mustContain(t, "rollout status", out, "successfully rolled out")
}

const held = "example.com/held"

// hookedCloneSet is a CloneSet of replicas pods whose hooks all hang on the
// label held=true, which its template sets: every pod is held until
// someone removes it, as an operator does.
func hookedCloneSet(t *testing.T, name string, replicas int32) (string, *appsv1alpha1.CloneSet) {
	t.Helper()
	ns := newNamespace(t)
	cs := newCloneSet(ns, name, replicas)
	hook := &pub.LifecycleHook{LabelsHandler: map[string]string{held: "true"}, MarkPodNotReady: true}
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: hook, PreDelete: hook}
	cs.Spec.Template.Labels[held] = "true"
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "every pod available", settled(replicas))
	return ns, cs
}

func podIn(t *testing.T, cs *appsv1alpha1.CloneSet, state pub.LifecycleStateType) string {
	t.Helper()
	var name string
	eventually(t, time.Minute, "a pod in "+string(state), func(context.Context) (bool, string, error) {
		for _, p := range clonePods(t, cs) {
			if p.Labels[pub.LifecycleStateKey] == string(state) {
				name = p.Name
				return true, "", nil
			}
		}
		return false, fmt.Sprint(podNames(clonePods(t, cs))), nil
	})
	return name
}

// TestPluginExplainsRolloutStuckOnPreDeleteHook: a scale-in waits on a
// pod's preDelete hook; status names the pod, the label that holds it and
// the command that releases it, and that command unblocks the rollout.
func TestPluginExplainsRolloutStuckOnPreDeleteHook(t *testing.T) {
	alongside(t)
	ns, cs := hookedCloneSet(t, "plugin-predelete", 2)
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](1) })
	pod := podIn(t, cs, pub.LifecycleStatePreparingDelete)

	msg, remedy := blockerFor(t, ns, "clone/"+cs.Name, pod, "HookHeld")
	mustContain(t, "the blocker", msg, "PreparingDelete", "preDelete hook", "label "+held+"=true")
	mustContain(t, "the remedy", remedy, fmt.Sprintf("kubectl -n %s label pod %s %s-", ns, pod, held))
	text := kubectlLifeline(t, ns, "status", "clone/"+cs.Name, "--color=never")
	mustContain(t, "the text view", text, "pod/"+pod+"  HookHeld", "PreparingDelete  1  "+pod, "Waiting: ")
	if strings.Contains(text, "\x1b[") {
		t.Errorf("colour without a terminal:\n%q", text)
	}

	byHand(t, remedy)
	rolledOut(t, ns, "clone/"+cs.Name)
	if s := pluginStatusOf(t, ns, "clone/"+cs.Name); !s.Done || len(s.Blockers) != 0 {
		t.Errorf("after the release: %+v", s)
	}
}

// TestPluginExplainsRolloutStuckOnInPlaceUpdateHook: an in-place update
// waits on the pod's inPlaceUpdate hook, then on the hook's label coming
// back; status and explain say which, and the commands they give move the
// pod on each time.
func TestPluginExplainsRolloutStuckOnInPlaceUpdateHook(t *testing.T) {
	ns, cs := hookedCloneSet(t, "plugin-inplace", 1)
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	pod := podIn(t, cs, pub.LifecycleStatePreparingUpdate)

	msg, remedy := blockerFor(t, ns, "clone/"+cs.Name, pod, "HookHeld")
	mustContain(t, "the blocker", msg, "PreparingUpdate", "inPlaceUpdate hook", "label "+held+"=true")
	explain := kubectlLifeline(t, ns, "explain", "pod/"+pod, "--color=never")
	mustContain(t, "explain", explain, "owned by CloneSet/"+cs.Name, "lifecycle state PreparingUpdate", "HookHeld",
		"condition KruisePodReady False", "Budgets: none covers this pod", "Disruption: would be admitted now")

	byHand(t, remedy)
	msg, remedy = blockerFor(t, ns, "clone/"+cs.Name, pod, "HookMissing")
	mustContain(t, "the blocker after the update", msg, "Updated in place", "label "+held+"=true not on the pod")
	byHand(t, remedy)
	rolledOut(t, ns, "clone/"+cs.Name)
}

// TestPluginExplainsRolloutBehindBudget: a budget that must keep every
// pod available holds a ReCreate rollout; status names the pods it holds
// and the budget's numbers, budget and explain agree, and loosening the
// budget as the remedy says lets the rollout finish.
func TestPluginExplainsRolloutBehindBudget(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	cs := newCloneSet(ns, "plugin-budget", 3)
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "3 pods available", settled(3))
	b := newBudget(ns, "plugin-budget", policyv1alpha1.PodUnavailableBudgetSpec{
		TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: cs.Name},
		MinAvailable:    ptr.To(intstr.FromInt32(3))})
	if err := k8s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the budget counts 3 pods", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(b), b)
		return err == nil && b.Status.TotalReplicas == 3 && b.Status.ObservedGeneration == b.Generation, fmt.Sprintf("%+v", b.Status), err
	})

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	pod := clonePods(t, cs)[0].Name
	msg, remedy := blockerFor(t, ns, "clone/"+cs.Name, pod, "BudgetRefusing")
	mustContain(t, "the blocker", msg, "pub/"+b.Name+" allows no more disruption", "unavailableAllowed 0", "desiredAvailable 3", "totalReplicas 3")
	mustContain(t, "the remedy", remedy, "spec.minAvailable", "kubectl lifeline budget pub/"+b.Name)
	budget := kubectlLifeline(t, ns, "budget", "pub/"+b.Name, "--color=never")
	mustContain(t, "budget", budget, "minAvailable 3", "allows no disruption now", "Pods (3):", pod)
	explain := kubectlLifeline(t, ns, "explain", "pod/"+pod, "--color=never")
	mustContain(t, "explain", explain, "Budget pub/"+b.Name+": unavailableAllowed 0", "Disruption: would be refused now")
	if got := podsOnImage(t, cs, "nginx:1.28"); got != 0 {
		t.Errorf("%d pods updated past a budget that allows none", got)
	}

	// The remedy: loosen the budget.
	if err := k8s.Patch(ctx, b, ctrlclient.RawPatch("application/merge-patch+json", []byte(`{"spec":{"minAvailable":2}}`))); err != nil {
		t.Fatal(err)
	}
	rolledOut(t, ns, "clone/"+cs.Name)
}

// TestPluginRolloutVerbs: pause holds an update back and status says so,
// resume lets it finish, history lists both revisions with their images,
// undo rolls the template back, and restart stamps the template.
func TestPluginRolloutVerbs(t *testing.T) {
	alongside(t)
	ctx := context.Background()
	ns := newNamespace(t)
	cs := newCloneSet(ns, "plugin-verbs", 2)
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "2 pods available", settled(2))
	ref := "clone/" + cs.Name

	mustContain(t, "pause", kubectlLifeline(t, ns, "rollout", "pause", ref), ref+" paused")
	mustContain(t, "pause again", kubectlLifeline(t, ns, "rollout", "pause", ref), "already paused")
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	waitCloneSet(t, cs, "the paused update observed", func(c *appsv1alpha1.CloneSet) bool {
		return c.Status.ObservedGeneration == c.Generation && c.Status.UpdateRevision != c.Status.CurrentRevision
	})
	s := pluginStatusOf(t, ns, ref)
	if s.Done || !s.Progress.Paused || len(s.Blockers) != 1 || s.Blockers[0].Reason != "Paused" || !strings.Contains(s.Blockers[0].Remedy, "rollout resume "+ref) {
		t.Errorf("status of the paused update: %+v", s)
	}
	if out, err := runPlugin(t, ns, "rollout", "status", ref, "--timeout", "3s"); err == nil || !strings.Contains(out, "timed out") {
		t.Errorf("rollout status of a paused update: %v\n%s", err, out)
	}
	if got := podsOnImage(t, cs, "nginx:1.28"); got != 0 {
		t.Errorf("%d pods updated while paused", got)
	}

	mustContain(t, "resume", kubectlLifeline(t, ns, "rollout", "resume", ref), ref+" resumed")
	rolledOut(t, ns, ref)
	history := kubectlLifeline(t, ns, "rollout", "history", ref)
	mustContain(t, "history", history, "REVISION", "nginx:1.27", "nginx:1.28", "(update revision)")
	mustContain(t, "history --revision 1", kubectlLifeline(t, ns, "rollout", "history", ref, "--revision", "1"), "image: nginx:1.27")

	mustContain(t, "undo", kubectlLifeline(t, ns, "rollout", "undo", ref), ref+" rolled back to revision 1")
	rolledOut(t, ns, ref)
	if got := podsOnImage(t, cs, "nginx:1.27"); got != 2 {
		t.Errorf("%d of 2 pods on nginx:1.27 after the undo", got)
	}
	// As a Deployment's, the revision rolled back to is renumbered: 1 is
	// now 3.
	mustContain(t, "undo to the same", kubectlLifeline(t, ns, "rollout", "undo", ref, "--to-revision", "3"), "skipped rollback")
	if out, err := runPlugin(t, ns, "rollout", "undo", ref, "--to-revision", "1"); err == nil || !strings.Contains(out, "has no revision 1") {
		t.Errorf("undo to a renumbered revision: %v\n%s", err, out)
	}

	mustContain(t, "restart", kubectlLifeline(t, ns, "rollout", "restart", ref), ref+" restarted")
	if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(cs), cs); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, cs.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]); err != nil {
		t.Errorf("restartedAt: %v", err)
	}
	rolledOut(t, ns, ref)

	if out, err := runPlugin(t, ns, "status", "deploy/nothing"); err == nil || !strings.Contains(out, "want one of CloneSet (clone)") {
		t.Errorf("status of a Deployment: %v\n%s", err, out)
	}
	if out, err := runPlugin(t, ns, "status", "clone/missing"); err == nil || !strings.Contains(out, "not found") {
		t.Errorf("status of a missing CloneSet: %v\n%s", err, out)
	}
}

// TestPluginAdvancedStatefulSetAndDaemonSet: the same views and verbs on
// the other two workloads: status names a pod held by its preDelete hook
// in an Advanced StatefulSet's scale-down, and pause, resume and undo move
// an Advanced DaemonSet's update (its pause lives in rollingUpdate).
func TestPluginAdvancedStatefulSetAndDaemonSet(t *testing.T) {
	ns := newNamespace(t)
	sts := newAdvancedStatefulSet(ns, "plugin-db", 2, "Parallel")
	sts.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{held: "true"}}}
	sts.Spec.Template.Labels[held] = "true"
	create(t, sts)
	waitAdvancedStatefulSet(t, sts, "2 pods available", stsSettled(2))
	mustContain(t, "status", kubectlLifeline(t, ns, "status", "asts/"+sts.Name), "successfully rolled out")
	updateAdvancedStatefulSet(t, sts, func(s *appsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	pod := sts.Name + "-1"
	_, remedy := blockerFor(t, ns, "asts/"+sts.Name, pod, "HookHeld")
	byHand(t, remedy)
	rolledOut(t, ns, "asts/"+sts.Name)

	daemonNodes(t, ns, ns+"-a", ns+"-b")
	ds := newAdvancedDaemonSet(ns, "plugin-agent")
	create(t, ds)
	waitAdvancedDaemonSet(t, ds, "a pod on each node", dsSettled(2))
	ref := "ads/" + ds.Name
	mustContain(t, "pause", kubectlLifeline(t, ns, "rollout", "pause", ref), ref+" paused")
	updateAdvancedDaemonSet(t, ds, func(s *appsv1beta1.DaemonSet) { s.Spec.Template.Spec.Containers[0].Image = "agent:2" })
	eventually(t, time.Minute, "status says paused", func(context.Context) (bool, string, error) {
		s := pluginStatusOf(t, ns, ref)
		return len(s.Blockers) == 1 && s.Blockers[0].Reason == "Paused" && s.Progress.Updated == 0, fmt.Sprintf("%+v", s), nil
	})
	mustContain(t, "resume", kubectlLifeline(t, ns, "rollout", "resume", ref), ref+" resumed")
	rolledOut(t, ns, ref)
	mustContain(t, "undo", kubectlLifeline(t, ns, "rollout", "undo", ref), ref+" rolled back to revision 1")
	waitAdvancedDaemonSet(t, ds, "back on agent:1", func(s *appsv1beta1.DaemonSet) bool {
		return s.Spec.Template.Spec.Containers[0].Image == "agent:1" && dsSettled(2)(s)
	})
	rolledOut(t, ns, ref)
}
