package diagnose

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// blockers lists what holds the rollout up: first the rollout as a whole
// (its controller behind, a pause, maxUnavailable used up), then each pod
// that is held or unavailable, then the outdated pods a budget keeps from
// being updated.
func blockers(s Snapshot, pods, unavailable, outdated []*corev1.Pod, p Progress) []Blocker {
	w := s.Workload
	var out []Blocker
	if p.ObservedGeneration < p.Generation {
		out = append(out, Blocker{Reason: "ControllerBehind",
			Message: fmt.Sprintf("the controller has not acted on generation %d yet (observed %d)", p.Generation, p.ObservedGeneration),
			Remedy:  "check that lifeline-manager runs and leads: kubectl -n lifeline-system get pods,leases"})
	}
	pending := int32(len(outdated)) - p.Partition
	if w.Paused && pending > 0 {
		out = append(out, Blocker{Reason: "Paused",
			Message: fmt.Sprintf("the update is paused with %d pods still at the old revision", pending),
			Remedy:  "kubectl lifeline rollout resume " + w.Ref()})
	}
	// The pods that wait for their turn: outdated and still available
	// (an unavailable one is already on its way, or has a line of its own).
	turn := int32(0)
	for _, pod := range outdated {
		if podfacts.IsAvailable(pod, w.MinReadySeconds, s.Now) {
			turn++
		}
	}
	turn = min(turn, pending)
	if !w.Paused && turn > 0 && p.Unavailable >= p.MaxUnavailable {
		out = append(out, Blocker{Reason: "MaxUnavailable",
			Message: fmt.Sprintf("maxUnavailable %d is used up by %s (%s); %s at the old revision waiting for a turn", p.MaxUnavailable, count(int(p.Unavailable), "unavailable pod"), podList(unavailable, 5), count(int(turn), "pod")),
			Remedy:  "the update goes on as those pods become available (see each below); or raise the update strategy's maxUnavailable"})
	}
	listed := map[string]bool{}
	for _, pod := range pods {
		if b := podBlocker(s, pod); b != nil {
			out = append(out, *b)
			listed[pod.Name] = true
		}
	}
	if !w.Paused && pending > 0 {
		out = append(out, budgetBlockers(s, outdated, unavailable, listed)...)
	}
	return out
}

// podBlocker is why pod holds the rollout up, or nil when it does not: it
// is available and not held.
func podBlocker(s Snapshot, pod *corev1.Pod) *Blocker {
	w, now := s.Workload, s.Now
	if pod.DeletionTimestamp != nil {
		return terminating(pod, now)
	}
	if !podfacts.IsActive(pod) {
		return nil
	}
	if b := hookBlocker(s, pod); b != nil {
		return b
	}
	if podfacts.IsAvailable(pod, w.MinReadySeconds, now) {
		return nil
	}
	b := readinessBlocker(pod, w.MinReadySeconds, now)
	if warning := imageWarning(s.Events, pod); warning != "" {
		b.Message += "; " + warning
	}
	return b
}

// imageWarning is the kubelet's newest Warning about the image of one of
// pod's waiting containers, or "". A real kubelet that cannot pull an image
// the container ran before spends most of its retries reporting
// CrashLoopBackOff (its restart back-off), so only its Events still say
// why.
func imageWarning(events []Event, pod *corev1.Pod) string {
	var images []string
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Waiting == nil {
			continue
		}
		for _, c := range pod.Spec.Containers {
			if c.Name == cs.Name && !strings.Contains(cs.State.Waiting.Message, c.Image) {
				images = append(images, c.Image)
			}
		}
	}
	var newest *Event
	for i, e := range events {
		if e.Type != corev1.EventTypeWarning || e.Regarding != "Pod/"+pod.Name || (newest != nil && !e.Time.After(newest.Time)) {
			continue
		}
		if slices.ContainsFunc(images, func(image string) bool { return strings.Contains(e.Message, image) }) {
			newest = &events[i]
		}
	}
	if newest == nil {
		return ""
	}
	return fmt.Sprintf("the kubelet's last warning: %s: %s", newest.Reason, newest.Message)
}

// hookBlocker is a pod held in a hooked state by its hook's handlers, or
// waiting for them to come.
func hookBlocker(s Snapshot, pod *corev1.Pod) *Blocker {
	lc := s.Workload.Lifecycle
	if lc == nil {
		lc = &pub.Lifecycle{}
	}
	state := podfacts.State(pod)
	since := podfacts.StateSince(pod)
	b := &Blocker{Pod: pod.Name}
	switch {
	case state == pub.LifecycleStatePreparingDelete && lifecycle.IsHooked(lc.PreDelete, pod):
		b.Reason, b.Message, b.Remedy = "HookHeld", "PreparingDelete, held by its preDelete hook: "+present(lc.PreDelete, pod), release(lc.PreDelete, pod)
	case state == pub.LifecycleStatePreparingUpdate && lifecycle.IsHooked(lc.InPlaceUpdate, pod):
		b.Reason, b.Message, b.Remedy = "HookHeld", "PreparingUpdate, held by its inPlaceUpdate hook: "+present(lc.InPlaceUpdate, pod), release(lc.InPlaceUpdate, pod)
	case state == pub.LifecycleStatePreparingNormal && lc.PreNormal != nil && !lifecycle.IsAllHooked(lc.PreNormal, pod):
		b.Reason, b.Message, b.Remedy = "HookMissing", "PreparingNormal, waits for its preNormal hook's handlers: "+missing(lc.PreNormal, pod), restore(lc.PreNormal, pod)
	case state == pub.LifecycleStateUpdated && lc.InPlaceUpdate != nil && !lifecycle.IsAllHooked(lc.InPlaceUpdate, pod):
		b.Reason, b.Message, b.Remedy = "HookMissing", "Updated in place, waits for its inPlaceUpdate hook's handlers to come back: "+missing(lc.InPlaceUpdate, pod), restore(lc.InPlaceUpdate, pod)
	default:
		return nil
	}
	if msg := operatorTrouble(pod); msg != "" {
		b.Message += "; " + msg
	}
	if !since.IsZero() {
		b.Since, b.For = &since, duration.HumanDuration(s.Now.Sub(since))
	}
	return b
}

// present names the hook's handlers still on the pod.
func present(h *pub.LifecycleHook, pod *corev1.Pod) string {
	var out []string
	for _, k := range sortedKeys(h.LabelsHandler) {
		if v, ok := pod.Labels[k]; ok && v == h.LabelsHandler[k] {
			out = append(out, fmt.Sprintf("label %s=%s", k, v))
		}
	}
	for _, f := range h.FinalizersHandler {
		if slices.Contains(pod.Finalizers, f) {
			out = append(out, "finalizer "+f)
		}
	}
	return strings.Join(out, ", ") + " still on the pod"
}

// missing names the hook's handlers not on the pod.
func missing(h *pub.LifecycleHook, pod *corev1.Pod) string {
	var out []string
	for _, k := range sortedKeys(h.LabelsHandler) {
		if v, ok := pod.Labels[k]; !ok || v != h.LabelsHandler[k] {
			out = append(out, fmt.Sprintf("label %s=%s", k, h.LabelsHandler[k]))
		}
	}
	for _, f := range h.FinalizersHandler {
		if !slices.Contains(pod.Finalizers, f) {
			out = append(out, "finalizer "+f)
		}
	}
	return strings.Join(out, ", ") + " not on the pod yet"
}

// release is the remedy for a held pod: its operator removes the
// handlers; by hand, the commands that do.
func release(h *pub.LifecycleHook, pod *corev1.Pod) string {
	var cmds []string
	var drop []string
	for _, k := range sortedKeys(h.LabelsHandler) {
		if v, ok := pod.Labels[k]; ok && v == h.LabelsHandler[k] {
			drop = append(drop, k+"-")
		}
	}
	if len(drop) > 0 {
		cmds = append(cmds, fmt.Sprintf("kubectl -n %s label pod %s %s", pod.Namespace, pod.Name, strings.Join(drop, " ")))
	}
	for i := len(pod.Finalizers) - 1; i >= 0; i-- {
		if slices.Contains(h.FinalizersHandler, pod.Finalizers[i]) {
			cmds = append(cmds, fmt.Sprintf(`kubectl -n %s patch pod %s --type=json -p '[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]'`,
				pod.Namespace, pod.Name, i, pod.Finalizers[i], i))
		}
	}
	return "its hook operator releases it by removing them when its work is done (kubectl lifeline explain pod/" + pod.Name +
		" shows the operators' records); to release it by hand: " + strings.Join(cmds, " && ")
}

// restore is the remedy for a pod waiting for its handlers.
func restore(h *pub.LifecycleHook, pod *corev1.Pod) string {
	var add []string
	for _, k := range sortedKeys(h.LabelsHandler) {
		if v, ok := pod.Labels[k]; !ok || v != h.LabelsHandler[k] {
			add = append(add, k+"="+h.LabelsHandler[k])
		}
	}
	r := "its hook operator adds them once the pod is ready for traffic (kubectl lifeline explain pod/" + pod.Name + ")"
	if len(add) > 0 {
		r += fmt.Sprintf("; by hand: kubectl -n %s label pod %s %s", pod.Namespace, pod.Name, strings.Join(add, " "))
	}
	return r
}

// operatorTrouble is what hook operators on the SDK report on the pod: a
// hook.lifeline.dev/<name> condition False (a failing or timed-out handler).
func operatorTrouble(pod *corev1.Pod) string {
	var out []string
	for _, c := range pod.Status.Conditions {
		if strings.HasPrefix(string(c.Type), hookPrefix) && c.Status == corev1.ConditionFalse {
			out = append(out, fmt.Sprintf("operator %s reports %s: %s", strings.TrimPrefix(string(c.Type), hookPrefix), c.Reason, c.Message))
		}
	}
	return strings.Join(out, "; ")
}

// hookPrefix starts the annotation and condition of each hook operator on
// the SDK (pkg/hook.AnnotationPrefix).
const hookPrefix = "hook.lifeline.dev/"

// terminating is a pod whose deletion takes longer than it should: kept by
// finalizers, or past its grace period with slack for a slow node. The
// deletion timestamp is when the grace period ends.
func terminating(pod *corev1.Pod, now time.Time) *Blocker {
	grace := time.Duration(0)
	if pod.DeletionGracePeriodSeconds != nil {
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	since := pod.DeletionTimestamp.Add(-grace)
	b := &Blocker{Pod: pod.Name, Reason: "Terminating", Since: &since, For: duration.HumanDuration(now.Sub(since))}
	switch {
	case len(pod.Finalizers) > 0:
		b.Message = "terminating, kept by finalizers " + strings.Join(pod.Finalizers, ", ")
		b.Remedy = "whoever set those finalizers removes them once done with the pod"
	case now.After(pod.DeletionTimestamp.Add(30 * time.Second)):
		b.Message = fmt.Sprintf("terminating, %s past its grace period of %s", duration.HumanDuration(now.Sub(pod.DeletionTimestamp.Time)), grace)
		b.Remedy = "its node has not confirmed the stop: check the node (kubectl get node " + pod.Spec.NodeName + ")"
	default:
		return nil
	}
	return b
}

// readinessBlocker is why an active, unheld pod is not available:
// scheduling, an in-place update under way, minReadySeconds, readiness.
func readinessBlocker(pod *corev1.Pod, minReady int32, now time.Time) *Blocker {
	b := &Blocker{Pod: pod.Name}
	at := func(t time.Time) {
		if !t.IsZero() {
			b.Since, b.For = &t, duration.HumanDuration(now.Sub(t))
		}
	}
	if c := condition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
		b.Reason, b.Message = "NotScheduled", "not scheduled: "+firstNonEmpty(c.Message, c.Reason)
		b.Remedy = "free capacity or loosen the pod's constraints (nodeSelector, affinity, tolerations, topology spread)"
		at(c.LastTransitionTime.Time)
		return b
	}
	if st := podfacts.InPlaceUpdateState(pod); st != nil && !podfacts.InPlaceUpdateDone(pod) {
		b.Reason = "UpdatingInPlace"
		b.Message = fmt.Sprintf("updating in place to revision %s: waiting for the kubelet to run the new images", podfacts.ShortHash(st.Revision))
		if podfacts.Grace(pod) == nil && len(st.NextContainerImages) == 0 && podfacts.ContainersUpdated(pod, st) {
			// Only the env read from labels or annotations is left.
			b.Message = fmt.Sprintf("updating in place to revision %s: waiting for the node agent to restart %s with the labels and annotations the update changed",
				podfacts.ShortHash(st.Revision), strings.Join(metadataEnvContainers(pod), ", "))
			b.Remedy = "the node agent on " + pod.Spec.NodeName + " restarts them once the kubelet has the new values; if it does not, read its log (the lifeline-node-agent pod on that node)"
			at(st.UpdateTimestamp.Time)
			return b
		}
		if waiting := waitingContainers(pod); len(waiting) > 0 {
			// An image that cannot be pulled holds the update for good.
			b.Message += "; " + strings.Join(waiting, "; ")
		}
		b.Remedy = "the kubelet restarts its containers; if it does not, check the node and the image (kubectl -n " + pod.Namespace + " describe pod " + pod.Name + ")"
		at(st.UpdateTimestamp.Time)
		return b
	}
	if podfacts.HasReadyCondition(pod) && pod.Status.Phase == corev1.PodRunning && podfacts.State(pod) != pub.LifecycleStatePreparingNormal {
		if left := podfacts.UntilAvailable(pod, minReady, now); left > 0 {
			b.Reason, b.Message = "MinReadySeconds", fmt.Sprintf("Ready, available in %s (minReadySeconds %d)", duration.HumanDuration(left), minReady)
			at(podfacts.ReadySince(pod))
			return b
		}
	}
	if st := podfacts.State(pod); st != "" && st != pub.LifecycleStateNormal && podfacts.IsReady(pod, minReady, now) {
		b.Reason, b.Message = "LifecycleState", fmt.Sprintf("%s: the controller moves it on next", st)
		at(podfacts.StateSince(pod))
		return b
	}
	b.Reason, b.Message = "NotReady", notReadyMessage(pod)
	b.Remedy = fmt.Sprintf("check its probes, events and logs: kubectl -n %s describe pod %s", pod.Namespace, pod.Name)
	if c := condition(pod, corev1.PodReady); c != nil {
		at(c.LastTransitionTime.Time)
	} else {
		at(pod.CreationTimestamp.Time)
	}
	return b
}

// notReadyMessage says why a pod is not Ready, from its phase, its Ready
// condition and its containers.
func notReadyMessage(pod *corev1.Pod) string {
	msg := "not Ready (phase " + string(pod.Status.Phase) + ")"
	parts := waitingContainers(pod)
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil: // listed by waitingContainers
		case cs.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("container %s terminated: %s", cs.Name, cs.State.Terminated.Reason))
		case !cs.Ready:
			parts = append(parts, fmt.Sprintf("container %s running but not ready", cs.Name))
		}
	}
	if len(parts) == 0 {
		if c := condition(pod, corev1.PodReady); c != nil && c.Message != "" {
			parts = append(parts, c.Message)
		}
		for _, g := range pod.Spec.ReadinessGates {
			if c := condition(pod, g.ConditionType); c == nil || c.Status != corev1.ConditionTrue {
				parts = append(parts, fmt.Sprintf("readiness gate %s not True", g.ConditionType))
			}
		}
	}
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	return msg
}

// waitingContainers says which containers wait and why, with the
// kubelet's message when it has one (a pull error names the image and the
// registry's answer).
func waitingContainers(pod *corev1.Pod) []string {
	var parts []string
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			why := firstNonEmpty(w.Reason, w.Message)
			if w.Reason != "" && w.Message != "" {
				why += " (" + w.Message + ")"
			}
			parts = append(parts, fmt.Sprintf("container %s waiting: %s", cs.Name, why))
		}
	}
	return parts
}

// budgetBlockers names the outdated pods a budget that allows no more
// disruption keeps at the old revision, with the budget's numbers.
func budgetBlockers(s Snapshot, outdated, unavailable []*corev1.Pod, listed map[string]bool) []Blocker {
	var out []Blocker
	for _, pod := range outdated {
		if listed[pod.Name] {
			continue
		}
		for _, b := range covering(s.Budgets, pod, s.Workload) {
			if b.Status.UnavailableAllowed > 0 {
				continue
			}
			out = append(out, Blocker{Pod: pod.Name, Reason: "BudgetRefusing",
				Message: fmt.Sprintf("at the old revision, and pub/%s allows no more disruption: %s", b.Name, budgetNumbers(b)),
				Remedy:  budgetRemedy(b, s, unavailable)})
			break
		}
	}
	return out
}

func budgetNumbers(b *policyv1beta1.PodUnavailableBudget) string {
	st := b.Status
	return fmt.Sprintf("unavailableAllowed %d, currentAvailable %d, desiredAvailable %d, totalReplicas %d", st.UnavailableAllowed, st.CurrentAvailable, st.DesiredAvailable, st.TotalReplicas)
}

func budgetRemedy(b *policyv1beta1.PodUnavailableBudget, s Snapshot, unavailable []*corev1.Pod) string {
	var waiting []*corev1.Pod
	for _, pod := range unavailable {
		if Covers(b, pod, s.Workload.Kind.Name, s.Workload.Name) {
			waiting = append(waiting, pod)
		}
	}
	r := "it goes on once the budget allows a disruption"
	if len(waiting) > 0 {
		r += ", as " + podList(waiting, 5) + " become(s) available again"
	}
	limit := "spec.maxUnavailable"
	if b.Spec.MinAvailable != nil {
		limit = "spec.minAvailable"
	}
	return r + "; or change pub/" + b.Name + "'s " + limit + " (kubectl lifeline budget pub/" + b.Name + ")"
}

// count is n and noun, in the plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func podList(pods []*corev1.Pod, most int) string {
	var names []string
	for i, p := range pods {
		if i == most {
			names = append(names, fmt.Sprintf("and %d more", len(pods)-most))
			break
		}
		names = append(names, "pod/"+p.Name)
	}
	return strings.Join(names, ", ")
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// metadataEnvContainers names a pod's containers whose env reads a label or
// annotation.
func metadataEnvContainers(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.Containers {
		if len(podfacts.MetadataEnv(c)) > 0 {
			names = append(names, c.Name)
		}
	}
	return names
}
