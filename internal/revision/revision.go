// Package revision turns a workload's pod template into ControllerRevision
// data, hashes and names that are byte-for-byte those of OpenKruise (the
// same for a CloneSet and an Advanced StatefulSet), so that a user moving a
// workload from OpenKruise to Lifeline keeps every pod at its revision
// instead of seeing all of them rolled.
package revision

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	hashutil "k8s.io/kubernetes/pkg/util/hash"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
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
func Data(cs *appsv1alpha1.CloneSet) ([]byte, error) { return TemplateData(&cs.Spec.Template) }

// TemplateData is the revision payload of any workload whose revisions
// hold its pod template, as Data describes it.
func TemplateData(tmpl *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	template := map[string]any{}
	if err := json.Unmarshal(raw, &template); err != nil {
		return nil, err
	}
	withNullCreationTimestamp(template)
	// The one ObjectMeta nested in a pod spec: an ephemeral volume's
	// claim template.
	spec, _ := template["spec"].(map[string]any)
	volumes, _ := spec["volumes"].([]any)
	for _, v := range volumes {
		volume, _ := v.(map[string]any)
		ephemeral, _ := volume["ephemeral"].(map[string]any)
		if claim, ok := ephemeral["volumeClaimTemplate"].(map[string]any); ok {
			withNullCreationTimestamp(claim)
		}
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// withNullCreationTimestamp gives obj's metadata the "creationTimestamp":null
// that k8s.io/apimachinery before v0.33 always encoded.
func withNullCreationTimestamp(obj map[string]any) {
	metadata, _ := obj["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
		obj["metadata"] = metadata
	}
	if _, ok := metadata["creationTimestamp"]; !ok {
		metadata["creationTimestamp"] = nil
	}
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

// PodTemplateHash is the hash the native DaemonSet and Deployment name
// their revisions by (Kubernetes' ComputeHash): FNV-1a 32 of a dump of the
// Go PodTemplateSpec and, when set, the collision count's 8 little-endian
// bytes. The dump follows the k8s.io/api struct layout, so the hash changes
// with it: OpenKruise v1.9.0 (k8s.io/api v0.32) names the same template
// differently. Existing revisions are therefore found by their data, never
// by this hash.
func PodTemplateHash(tmpl *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	hashutil.DeepHashObject(h, *tmpl)
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// Name is the name of the revision of a workload with the given hash. Long
// workload names are cut so the name stays a valid object name.
func Name(csName, hash string) string {
	const maxPrefix = 223
	if len(csName) > maxPrefix {
		csName = csName[:maxPrefix]
	}
	return csName + "-" + hash
}

// HashLabel is the label Kubernetes' controller history, and so OpenKruise,
// puts a revision's hash under.
const HashLabel = "controller.kubernetes.io/hash"

// ClaimTemplatesHash is OpenKruise's hash of a CloneSet's
// volumeClaimTemplates, kept in a revision's
// kruise.io/cloneset-volumeclaimtemplate-hash annotation: "" without
// templates, else the decimal FNV-1a 32 of Kubernetes' DeepHashObject over
// the JSON of the templates' names and specs, sorted by name. The JSON is
// encoded as apimachinery before v0.33 encoded it, with
// "creationTimestamp":null, so the hash is OpenKruise's.
func ClaimTemplatesHash(templates []corev1.PersistentVolumeClaim) string {
	if len(templates) == 0 {
		return ""
	}
	type claimMeta struct {
		Name              string `json:"name,omitempty"`
		CreationTimestamp *int   `json:"creationTimestamp"`
	}
	type claim struct {
		Metadata claimMeta                          `json:"metadata"`
		Spec     corev1.PersistentVolumeClaimSpec   `json:"spec"`
		Status   corev1.PersistentVolumeClaimStatus `json:"status"`
	}
	claims := make([]claim, 0, len(templates))
	for _, t := range templates {
		claims = append(claims, claim{Metadata: claimMeta{Name: t.Name}, Spec: t.Spec})
	}
	sort.SliceStable(claims, func(i, j int) bool { return claims[i].Metadata.Name < claims[j].Metadata.Name })
	data, err := json.Marshal(claims)
	if err != nil {
		return ""
	}
	h := fnv.New32a()
	// The dump of a byte slice shows its capacity too; json.Marshal's
	// result has the capacity append gives len(data) bytes.
	hashutil.DeepHashObject(h, append([]byte(nil), data...))
	return strconv.FormatUint(uint64(h.Sum32()), 10)
}

// New builds the ControllerRevision of a CloneSet at the given collision
// count and revision number, as OpenKruise builds it: labelled with the
// template labels and the hash, owned by the CloneSet, carrying its
// annotations and the hash of its volumeClaimTemplates.
func New(cs *appsv1alpha1.CloneSet, collisionCount *int32, number int64) (*appsv1.ControllerRevision, error) {
	return NewFor(CloneSetSource(cs), collisionCount, number)
}

// CloneSetOwnerKind is the kind the owner references of a CloneSet's pods,
// claims and revisions name: v1beta1, the version the CRDs store and the
// API server's discovery prefers, as OpenKruise's v1.9.0 module writes
// them (its released manifests wrote v1alpha1; both are matched by group
// and kind). kube-controller-manager's garbage collector observes
// CloneSets in the preferred version and checks every dependent whose
// reference names another one with two live reads, the pod and the
// CloneSet through the conversion webhook: 1,924 extra reads in a
// 1,000-pod scale-up (11-28), which slowed every request beside them.
var CloneSetOwnerKind = appsv1beta1.GroupVersion.WithKind("CloneSet")

// CloneSetSource is a CloneSet as its revisions need it.
func CloneSetSource(cs *appsv1alpha1.CloneSet) Source {
	annotations := map[string]string{}
	for k, v := range cs.Annotations {
		annotations[k] = v
	}
	annotations[appsv1alpha1.VolumeClaimTemplatesHashAnnotation] = ClaimTemplatesHash(cs.Spec.VolumeClaimTemplates)
	return Source{Owner: cs, Kind: CloneSetOwnerKind, Template: &cs.Spec.Template, Annotations: annotations,
		CurrentRevision: cs.Status.CurrentRevision, CollisionCount: cs.Status.CollisionCount}
}
