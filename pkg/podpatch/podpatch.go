// Package podpatch writes pods the way every Lifeline controller must: as
// one JSON patch (RFC 6902) whose test operations check what the decision
// rested on (the pod's UID, labels and finalizers, a condition's position,
// type and message), so a write planned from a stale view fails instead of
// undoing someone else's change, while the kubelet's own status writes do
// not make it fail.
package podpatch

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patch is one JSON patch (RFC 6902) of a pod, guarded by test
// operations on what the plan's decision rested on instead of by the pod's
// resourceVersion.
//
// A pod's status and metadata share one resourceVersion, and the kubelet
// writes status all the time: in-place updates and readiness changes make
// it write right after ours. A resourceVersion guard turns each of those
// writes into a conflict and a replan (OpenKruise loses about half its
// in-place status writes that way). Every decision the planner makes about
// a pod rests on its labels (lifecycle state, hook handlers, revision) and
// finalizers (hook handlers), so those are what is tested: a patch still
// fails, and the pod is planned again, when an operator moved a hook label
// in between, but not when the kubelet reported a restart.
type Patch struct {
	pod *corev1.Pod
	ops []patchOp
	// labels is the pod's label set after the patch, once changed.
	labels map[string]string
	// conditions are the conditions to set, in order.
	conditions []corev1.PodCondition
	// status says the patch must go to the pods/status subresource: it sets
	// conditions. That subresource takes labels, annotations and
	// finalizers too, so a state change and its readiness go in one write.
	status bool
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// MarshalJSON leaves out the value of a remove, which has none.
func (o patchOp) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(map[string]string{"op": o.Op, "path": o.Path})
	}
	type plain patchOp
	return json.Marshal(plain(o))
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// Pointer is the JSON pointer (RFC 6901) to the member at parts.
func Pointer(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(p))
	}
	return b.String()
}

// New starts a patch of pod that applies only to the pod the plan
// saw: same UID and, with guardDecision, the same labels and finalizers.
func New(pod *corev1.Pod, guardDecision bool) *Patch {
	p := &Patch{pod: pod}
	p.Test(Pointer("metadata", "uid"), string(pod.UID))
	if guardDecision {
		p.Test(Pointer("metadata", "labels"), nilIfEmpty(pod.Labels))
		p.Test(Pointer("metadata", "finalizers"), nilIfEmpty(pod.Finalizers))
	}
	return p
}

// nilIfEmpty maps an empty map or slice to nil: the pod's JSON leaves them
// out, and a test against null passes on a missing member.
func nilIfEmpty[T any](v T) any {
	switch x := any(v).(type) {
	case map[string]string:
		if len(x) == 0 {
			return nil
		}
	case []string:
		if len(x) == 0 {
			return nil
		}
	case string:
		if x == "" {
			return nil
		}
	}
	return v
}

// Pod is the pod the patch is for, as the plan saw it.
func (p *Patch) Pod() *corev1.Pod { return p.pod }

// Status reports whether the patch goes to the pods/status subresource: it
// sets conditions.
func (p *Patch) Status() bool { return p.status }

// Test adds a test operation: the patch applies only if path holds value.
func (p *Patch) Test(path string, value any) {
	p.ops = append(p.ops, patchOp{Op: "test", Path: path, Value: value})
}

// SetLabels sets and removes labels. The whole label set is written, which
// is safe because it was tested (New with guardDecision).
func (p *Patch) SetLabels(set map[string]string, remove ...string) {
	if p.labels == nil {
		p.labels = map[string]string{}
		for k, v := range p.pod.Labels {
			p.labels[k] = v
		}
	}
	for k, v := range set {
		p.labels[k] = v
	}
	for _, k := range remove {
		delete(p.labels, k)
	}
}

// SetAnnotation sets one annotation, leaving the others as they are by then.
func (p *Patch) SetAnnotation(key, value string) {
	if p.pod.Annotations == nil && !p.HasOp("add", Pointer("metadata", "annotations")) {
		p.Test(Pointer("metadata", "annotations"), nil)
		p.ops = append(p.ops, patchOp{Op: "add", Path: Pointer("metadata", "annotations"), Value: map[string]string{}})
	}
	p.ops = append(p.ops, patchOp{Op: "add", Path: Pointer("metadata", "annotations", key), Value: value})
}

// RemoveAnnotation removes one annotation the pod had when planned.
func (p *Patch) RemoveAnnotation(key string) {
	if _, ok := p.pod.Annotations[key]; ok {
		p.ops = append(p.ops, patchOp{Op: "remove", Path: Pointer("metadata", "annotations", key)})
	}
}

// AddFinalizers adds finalizers the pod lacks. The whole list is written,
// which is safe because it was tested (New with guardDecision).
func (p *Patch) AddFinalizers(finalizers []string) {
	list := slices.Clone(p.pod.Finalizers)
	for _, f := range finalizers {
		if !slices.Contains(list, f) {
			list = append(list, f)
		}
	}
	if len(list) > len(p.pod.Finalizers) {
		p.ops = append(p.ops, patchOp{Op: "add", Path: Pointer("metadata", "finalizers"), Value: list})
	}
}

// RemoveFinalizers removes finalizers the pod has. The whole list is
// written, which is safe because it was tested (New with guardDecision).
func (p *Patch) RemoveFinalizers(finalizers []string) {
	list := slices.DeleteFunc(slices.Clone(p.pod.Finalizers), func(f string) bool { return slices.Contains(finalizers, f) })
	if len(list) < len(p.pod.Finalizers) {
		p.ops = append(p.ops, patchOp{Op: "add", Path: Pointer("metadata", "finalizers"), Value: list})
	}
}

// SetImage changes the image of the container at index i, named name.
func (p *Patch) SetImage(i int, name, image string) {
	base := []string{"spec", "containers", strconv.Itoa(i)}
	p.Test(Pointer(append(base, "name")...), name)
	p.ops = append(p.ops, patchOp{Op: "replace", Path: Pointer(append(base, "image")...), Value: image})
}

// SetCondition sets a pod condition, keeping its lastTransitionTime when
// its status does not change. The patch goes to pods/status.
func (p *Patch) SetCondition(c corev1.PodCondition) {
	for i := range p.conditions {
		if p.conditions[i].Type == c.Type {
			p.conditions[i] = c
			return
		}
	}
	p.conditions = append(p.conditions, c)
	p.status = true
}

func (p *Patch) HasOp(op, path string) bool {
	for _, o := range p.ops {
		if o.Op == op && o.Path == path {
			return true
		}
	}
	return false
}

// ChangesNothing reports whether the patch holds no change at all.
func (p *Patch) ChangesNothing() bool {
	if p.labels != nil || len(p.conditions) > 0 {
		return false
	}
	for _, o := range p.ops {
		if o.Op != "test" {
			return false
		}
	}
	return true
}

// data renders the patch. Conditions are replaced by index, each index
// tested to still hold the condition's type, or appended.
func (p *Patch) Data() ([]byte, error) {
	ops := slices.Clone(p.ops)
	if p.labels != nil {
		ops = append(ops, patchOp{Op: "add", Path: Pointer("metadata", "labels"), Value: p.labels})
	}
	conditionsPath := Pointer("status", "conditions")
	appended := false
	for _, c := range p.conditions {
		i := slices.IndexFunc(p.pod.Status.Conditions, func(old corev1.PodCondition) bool { return old.Type == c.Type })
		if i >= 0 {
			old := p.pod.Status.Conditions[i]
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			// The message is tested too: KruisePodReady's lists every
			// writer's reasons, and one must not drop another's.
			at := conditionsPath + "/" + strconv.Itoa(i)
			ops = append(ops,
				patchOp{Op: "test", Path: at + "/type", Value: string(c.Type)},
				patchOp{Op: "test", Path: at + "/message", Value: nilIfEmpty(old.Message)},
				patchOp{Op: "replace", Path: at, Value: c})
			continue
		}
		if len(p.pod.Status.Conditions) == 0 && !appended {
			ops = append(ops, patchOp{Op: "test", Path: conditionsPath, Value: nil}, patchOp{Op: "add", Path: conditionsPath, Value: []corev1.PodCondition{c}})
		} else {
			ops = append(ops, patchOp{Op: "add", Path: conditionsPath + "/-", Value: c})
		}
		appended = true
	}
	return json.Marshal(ops)
}

// Send applies the patch through c: to the pods/status subresource when it
// sets conditions, else to the pod. It returns the pod as written (its new
// resourceVersion, for expectations); a patch that changes nothing is not
// sent and returns nil.
func Send(ctx context.Context, c client.Client, p *Patch) (*corev1.Pod, error) {
	if p.ChangesNothing() {
		return nil, nil
	}
	data, err := p.Data()
	if err != nil {
		return nil, err
	}
	target := p.Pod().DeepCopy()
	patch := client.RawPatch(types.JSONPatchType, data)
	if p.Status() {
		err = c.Status().Patch(ctx, target, patch)
	} else {
		err = c.Patch(ctx, target, patch)
	}
	if err != nil {
		return nil, err
	}
	return target, nil
}

// IsStale reports whether a write failed because the pod is no longer what
// the plan saw: a resourceVersion conflict, or a JSON patch the API server
// could not apply. The server reports the latter as a bare 422, without
// the causes a validation error carries; since our patches are well formed
// by construction (see the tests), it means a test failed or a path the
// plan saw is gone. The pod is simply planned again from the cache.
func IsStale(err error) bool {
	if apierrors.IsConflict(err) {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	st := status.Status()
	return st.Code == http.StatusUnprocessableEntity && (st.Details == nil || len(st.Details.Causes) == 0) &&
		strings.HasPrefix(st.Message, "the server rejected our request due to an error in our request")
}
