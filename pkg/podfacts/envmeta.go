package podfacts

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// MetadataEnv names the env variables of a container whose values the
// kubelet takes from one of the pod's labels or annotations when it starts
// the container (a fieldRef to metadata.labels['k'] or
// metadata.annotations['k']), with the field path each reads. A later
// definition of a name replaces an earlier one, as in the kubelet. A
// reference to a whole map (metadata.labels) is left out, as OpenKruise
// leaves it out: every update changes the pod's revision and state labels,
// so such a container would restart on every update, and again on the
// update's end.
func MetadataEnv(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && readsMetadataKey(e.ValueFrom.FieldRef.FieldPath) {
			out[e.Name] = e.ValueFrom.FieldRef.FieldPath
		} else {
			delete(out, e.Name)
		}
	}
	return out
}

// ReadsMetadataKeys reports whether a container's env reads any of the
// label keys or annotation keys given.
func ReadsMetadataKeys(c corev1.Container, labels, annotations []string) bool {
	for _, path := range MetadataEnv(c) {
		m, key := splitMetadataPath(path)
		if (m == "labels" && slices.Contains(labels, key)) || (m == "annotations" && slices.Contains(annotations, key)) {
			return true
		}
	}
	return false
}

// MetadataEnvValues are the values the kubelet gives a container's
// MetadataEnv from the pod's labels and annotations now (a missing key
// reads as "").
func MetadataEnvValues(pod *corev1.Pod, c corev1.Container) map[string]string {
	out := map[string]string{}
	for name, path := range MetadataEnv(c) {
		m, key := splitMetadataPath(path)
		if m == "annotations" {
			out[name] = pod.Annotations[key]
		} else {
			out[name] = pod.Labels[key]
		}
	}
	return out
}

// EnvHash is the hash of env values (name to value) that a node agent
// reports for a running container (RuntimeContainerHashes'
// ExtractedEnvFromMetadataHash) and that completion compares with the
// hash of MetadataEnvValues. It is 0 for no values. OpenKruise hashes the
// whole container spec with the values filled in; the two cannot be
// compared, and do not need to be: the agent and the manager that read
// each other's reports are Lifeline's.
func EnvHash(values map[string]string) uint64 {
	if len(values) == 0 {
		return 0
	}
	h := fnv.New64a()
	for _, name := range slices.Sorted(maps.Keys(values)) {
		fmt.Fprintf(h, "%s=%s\x00", name, values[name])
	}
	return h.Sum64()
}

// splitMetadataPath splits metadata.labels['k'] or
// metadata.annotations['k'] into the map's name and the key; anything else
// gives an empty name.
func splitMetadataPath(path string) (m, key string) {
	rest, ok := strings.CutPrefix(path, "metadata.")
	i := strings.Index(rest, "['")
	if !ok || i < 0 || !strings.HasSuffix(rest, "']") {
		return "", ""
	}
	return rest[:i], rest[i+2 : len(rest)-2]
}

func readsMetadataKey(path string) bool {
	m, _ := splitMetadataPath(path)
	return m == "labels" || m == "annotations"
}

// EnvFromMetadataUpdated reports whether the containers whose env reads
// the pod's labels or annotations run with the values those have now, when
// the update changed some (st.UpdateEnvFromMetadata) and a node agent
// reports on the pod (pub.RuntimeContainerMetaKey): its report for the
// container running now carries the hash of the values it runs with.
//
// A pod without a report has no agent on its node, and its containers keep
// the values they started with: OpenKruise waits for its node daemon for
// ever there, which would stop a rollout on nodes without one.
func EnvFromMetadataUpdated(pod *corev1.Pod, st *pub.InPlaceUpdateState) bool {
	if st == nil || !st.UpdateEnvFromMetadata {
		return true
	}
	report := RuntimeContainerMeta(pod)
	if report == nil {
		return true
	}
	reported := map[string]pub.RuntimeContainerMeta{}
	for _, c := range report.Containers {
		reported[c.Name] = c
	}
	running := map[string]string{}
	for _, cs := range pod.Status.ContainerStatuses {
		running[cs.Name] = cs.ContainerID
	}
	for _, c := range pod.Spec.Containers {
		want := EnvHash(MetadataEnvValues(pod, c))
		if want == 0 {
			continue
		}
		r, ok := reported[c.Name]
		if !ok || r.ContainerID == "" || r.ContainerID != running[c.Name] || r.Hashes.ExtractedEnvFromMetadataHash != want {
			return false
		}
	}
	return true
}

// RuntimeContainerMeta reads a node agent's report on a pod, or nil.
func RuntimeContainerMeta(pod *corev1.Pod) *pub.RuntimeContainerMetaSet {
	raw, ok := pod.Annotations[pub.RuntimeContainerMetaKey]
	if !ok {
		return nil
	}
	set := &pub.RuntimeContainerMetaSet{}
	if json.Unmarshal([]byte(raw), set) != nil {
		return nil
	}
	return set
}
