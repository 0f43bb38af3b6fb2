// Package revision turns a CloneSet's pod template into ControllerRevision
// data, hashes and names that are byte-for-byte those of OpenKruise, so that
// a user moving a CloneSet from OpenKruise to Lifeline keeps every pod at its
// revision instead of seeing all of them rolled.
package revision

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// Data is the ControllerRevision payload of a CloneSet: its pod template as
// {"spec":{"template":{"$patch":"replace",...}}}.
//
// The bytes matter, since the revision name hashes them. They are those of
// encoding/json over a generic map (sorted keys, HTML escaped), as
// OpenKruise produces them. One difference is made up for: OpenKruise builds
// with k8s.io/apimachinery older than v0.33, whose ObjectMeta always encodes
// "creationTimestamp":null; newer versions omit the zero time. Without that
// key every revision name would change on migration.
func Data(cs *appsv1alpha1.CloneSet) ([]byte, error) {
	raw, err := json.Marshal(cs.Spec.Template)
	if err != nil {
		return nil, err
	}
	template := map[string]any{}
	if err := json.Unmarshal(raw, &template); err != nil {
		return nil, err
	}
	metadata, _ := template["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
		template["metadata"] = metadata
	}
	if _, ok := metadata["creationTimestamp"]; !ok {
		metadata["creationTimestamp"] = nil
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// Hash is the hash Kubernetes' controller history gives revision data: FNV-1
// 32 of the data and the decimal collision count, in the safe alphabet.
func Hash(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// Name is the name of the revision of a CloneSet with the given hash. Long
// CloneSet names are cut so the name stays a valid object name.
func Name(csName, hash string) string {
	const maxPrefix = 223
	if len(csName) > maxPrefix {
		csName = csName[:maxPrefix]
	}
	return csName + "-" + hash
}

// ShortHash is the part of a revision name after its last dash: what the
// pod-template-hash label holds, and what revisions are compared by, so a
// pod labelled with either the full name or the short hash matches.
func ShortHash(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '-' {
			return name[i+1:]
		}
	}
	return name
}

// Matches reports whether a pod's controller-revision-hash label value names
// the given revision, in its full or short form.
func Matches(labelValue, revisionName string) bool {
	return labelValue != "" && ShortHash(labelValue) == ShortHash(revisionName)
}

// New builds the ControllerRevision of a CloneSet at the given collision
// count and revision number: labelled with the template labels and the
// hash, owned by the CloneSet, and carrying its annotations.
func New(cs *appsv1alpha1.CloneSet, collisionCount *int32, number int64) (*appsv1.ControllerRevision, error) {
	data, err := Data(cs)
	if err != nil {
		return nil, err
	}
	hash := Hash(data, collisionCount)
	labels := map[string]string{}
	for k, v := range cs.Spec.Template.Labels {
		labels[k] = v
	}
	labels[appsv1.ControllerRevisionHashLabelKey] = hash
	annotations := map[string]string{}
	for k, v := range cs.Annotations {
		annotations[k] = v
	}
	cr := &appsv1.ControllerRevision{}
	cr.Name = Name(cs.Name, hash)
	cr.Namespace = cs.Namespace
	cr.Labels = labels
	cr.Annotations = annotations
	cr.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(cs, appsv1alpha1.GroupVersion.WithKind("CloneSet"))}
	cr.Data.Raw = data
	cr.Revision = number
	return cr, nil
}
