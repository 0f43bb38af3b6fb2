package hook

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// AnnotationPrefix starts the annotation in which an operator records, on
// each pod, the last moment it completed: hook.lifeline.dev/<operator
// name>.
const AnnotationPrefix = "hook.lifeline.dev/"

// record is what an operator wrote on a pod when it completed a moment.
type record struct {
	Moment   Moment    `json:"moment"`
	Revision string    `json:"revision"`
	At       time.Time `json:"at"`
}

// recordKey is the annotation, and the pod condition type, of the operator
// named name.
func recordKey(name string) string { return AnnotationPrefix + name }

// validateName checks that an operator's name makes a valid annotation key
// and condition type.
func validateName(name string) error {
	if errs := validation.IsQualifiedName(recordKey(name)); len(errs) > 0 {
		return fmt.Errorf("operator name %q: %v", name, errs)
	}
	return nil
}

// lastRecord reads the operator's record on pod; nil when there is none or
// it cannot be read (then the pod counts as never handled).
func lastRecord(pod *corev1.Pod, name string) *record {
	v, ok := pod.Annotations[recordKey(name)]
	if !ok {
		return nil
	}
	r := &record{}
	if err := json.Unmarshal([]byte(v), r); err != nil {
		return nil
	}
	return r
}

// LastMoment is the last moment the operator named name completed for pod,
// as recorded on it, and the revision it was at; ok is false when it has
// completed none.
func LastMoment(pod *corev1.Pod, name string) (m Moment, revision string, ok bool) {
	r := lastRecord(pod, name)
	if r == nil {
		return "", "", false
	}
	return r.Moment, r.Revision, true
}

func (r record) String() string {
	data, _ := json.Marshal(r)
	return string(data)
}
