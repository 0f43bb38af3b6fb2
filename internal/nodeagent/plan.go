// Package nodeagent is Lifeline's node agent: on each node it runs on, it
// restarts the containers whose env reads a label or annotation an
// in-place update changed (the kubelet sets such env only when it starts a
// container), and reports, on each pod whose env reads its metadata, the
// values each running container has, which the manager waits for before
// it calls the update done (podfacts.EnvFromMetadataUpdated). OpenKruise's
// kruise-daemon does the same (feature gate InPlaceUpdateEnvFromMetadata).
package nodeagent

import (
	"encoding/json"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// A Container is what the runtime says of a running container: the env it
// was started with.
type Container struct {
	Env map[string]string
}

// A Plan is what the agent does for one pod: stop containers (the kubelet
// starts them again, with the env of the pod's metadata now), and write
// its report when it changed (nil: leave it).
type Plan struct {
	Stops  []Stop
	Report *pub.RuntimeContainerMetaSet
}

// A Stop is one container to stop, and why.
type Stop struct {
	Container, ContainerID, Reason string
}

// PlanPod plans for pod from the runtime's containers, by container ID
// (those the runtime does not know, or not yet, are left for later).
//
// A container is stopped only while its pod is Updating in place with an
// update that changed metadata its env reads (the manager has taken the
// pod out of its budget and its traffic), and only when no new image is
// coming for it: the kubelet restarts it for the image, with the new env,
// so each container restarts once however many of the two change.
func PlanPod(pod *corev1.Pod, runtime map[string]Container) Plan {
	var plan Plan
	report := &pub.RuntimeContainerMetaSet{}
	statuses := map[string]corev1.ContainerStatus{}
	for _, cs := range pod.Status.ContainerStatuses {
		statuses[cs.Name] = cs
	}
	st := podfacts.InPlaceUpdateState(pod)
	updating := podfacts.State(pod) == pub.LifecycleStateUpdating && st != nil && st.UpdateEnvFromMetadata
	for _, c := range pod.Spec.Containers {
		env := podfacts.MetadataEnv(c)
		cs, ok := statuses[c.Name]
		if len(env) == 0 || !ok || cs.State.Running == nil || cs.ContainerID == "" {
			continue
		}
		rc, known := runtime[cs.ContainerID]
		if !known {
			continue
		}
		running := map[string]string{}
		for name := range env {
			running[name] = rc.Env[name]
		}
		hash := podfacts.EnvHash(running)
		report.Containers = append(report.Containers, pub.RuntimeContainerMeta{Name: c.Name, ContainerID: cs.ContainerID,
			RestartCount: cs.RestartCount, Hashes: pub.RuntimeContainerHashes{ExtractedEnvFromMetadataHash: hash}})
		if updating && hash != podfacts.EnvHash(podfacts.MetadataEnvValues(pod, c)) && !imageComing(pod, st, cs) {
			plan.Stops = append(plan.Stops, Stop{Container: c.Name, ContainerID: cs.ContainerID,
				Reason: "its env reads labels or annotations the in-place update changed"})
		}
	}
	if len(report.Containers) > 0 && !apiequality.Semantic.DeepEqual(report, podfacts.RuntimeContainerMeta(pod)) {
		plan.Report = report
	}
	return plan
}

// imageComing reports whether the update will change the container's
// image still: in a grace period, in a later batch, or written and not yet
// applied by the kubelet (the recorded container still runs).
func imageComing(pod *corev1.Pod, st *pub.InPlaceUpdateState, cs corev1.ContainerStatus) bool {
	if g := podfacts.Grace(pod); g != nil {
		if _, ok := g.ContainerImages[cs.Name]; ok {
			return true
		}
	}
	if _, ok := st.NextContainerImages[cs.Name]; ok {
		return true
	}
	last, ok := st.LastContainerStatuses[cs.Name]
	if !ok {
		return false
	}
	if last.ContainerID != "" {
		return last.ContainerID == cs.ContainerID
	}
	return last.ImageID == cs.ImageID
}

// ReportPatch is the merge patch that writes a report on the pod of uid
// (the API server refuses it for a pod of the same name made since).
func ReportPatch(uid types.UID, report *pub.RuntimeContainerMetaSet) ([]byte, error) {
	raw, err := json.Marshal(report)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid,
		"annotations": map[string]string{pub.RuntimeContainerMetaKey: string(raw)}}})
}

// KubeletHolds keeps the stops of containers for which the kubelet's copy
// of the pod (kubeletPod, nil when it has none) gives the env the values of
// pod: the kubelet starts a stopped container from its copy, and a copy
// not yet updated would start it with the old values, to be stopped again.
// waiting says some stop must wait for the kubelet.
func KubeletHolds(pod, kubeletPod *corev1.Pod, stops []Stop) (now []Stop, waiting bool) {
	want := map[string]uint64{}
	for _, c := range pod.Spec.Containers {
		want[c.Name] = podfacts.EnvHash(podfacts.MetadataEnvValues(pod, c))
	}
	for _, s := range stops {
		held := false
		if kubeletPod != nil {
			for _, c := range kubeletPod.Spec.Containers {
				if c.Name == s.Container {
					held = podfacts.EnvHash(podfacts.MetadataEnvValues(kubeletPod, c)) == want[s.Container]
				}
			}
		}
		if held {
			now = append(now, s)
		} else {
			waiting = true
		}
	}
	return now, waiting
}

// A Settle holds stops until the kubelet's copy of the pod has had the new
// values for a while. The kubelet's copy is not yet what a restart uses: a
// pod worker syncing when the update came goes on with the copy it took,
// waiting for its runtime cache to be newer than its last sync (the next
// PLEG relist, every second), and a container that dies meanwhile is
// started from that copy, with the old values (seen on real nodes, and then
// stopped a second time). Two relists after the copy changed, the worker
// has taken the new one.
type Settle struct {
	For time.Duration

	mu    sync.Mutex
	since map[settleKey]time.Time
}

type settleKey struct {
	uid       types.UID
	container string
	values    uint64
}

// Ready keeps the stops whose values the kubelet has held for s.For by
// now, and says how long until the first of the rest is due.
func (s *Settle) Ready(pod *corev1.Pod, stops []Stop, now time.Time) (ready []Stop, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.since == nil {
		s.since = map[settleKey]time.Time{}
	}
	for k, since := range s.since {
		if now.Sub(since) > time.Hour { // a pod gone mid-update
			delete(s.since, k)
		}
	}
	for _, st := range stops {
		var values uint64
		for _, c := range pod.Spec.Containers {
			if c.Name == st.Container {
				values = podfacts.EnvHash(podfacts.MetadataEnvValues(pod, c))
			}
		}
		k := settleKey{pod.UID, st.Container, values}
		since, ok := s.since[k]
		if !ok {
			since, s.since[k] = now, now
		}
		if left := since.Add(s.For).Sub(now); left > 0 {
			if wait == 0 || left < wait {
				wait = left
			}
			continue
		}
		delete(s.since, k)
		ready = append(ready, st)
	}
	return ready, wait
}

// Forget drops what the settle knows of a pod (gone, or without stops).
func (s *Settle) Forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.since {
		if k.uid == uid {
			delete(s.since, k)
		}
	}
}
