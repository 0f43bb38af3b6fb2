package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.ToLower(t.Name()[:min(len(t.Name()), 40)]) + "-"}}
	ns.GenerateName = strings.NewReplacer("/", "-", "_", "-").Replace(ns.GenerateName)
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

func TestCRDsAreInstalledWithTheirNamesAndSubresources(t *testing.T) {
	want := []struct {
		name       string
		kind       string
		shortNames []string
		scale      *apiextensionsv1.CustomResourceSubresourceScale
		columns    []string
	}{
		{
			name: "clonesets.apps.kruise.io", kind: "CloneSet", shortNames: []string{"clone"},
			scale: &apiextensionsv1.CustomResourceSubresourceScale{
				SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".status.labelSelector"),
			},
			columns: []string{"DESIRED", "UPDATED", "UPDATED_READY", "UPDATED_AVAILABLE", "READY", "TOTAL", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"},
		},
		{name: "persistentpodstates.apps.kruise.io", kind: "PersistentPodState", shortNames: []string{"pps"}},
		{
			name: "statefulsets.apps.kruise.io", kind: "StatefulSet", shortNames: []string{"sts", "asts"},
			scale: &apiextensionsv1.CustomResourceSubresourceScale{
				SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".status.labelSelector"),
			},
			columns: []string{"DESIRED", "CURRENT", "UPDATED", "READY", "AGE", "CONTAINERS", "IMAGES"},
		},
		{
			name: "daemonsets.apps.kruise.io", kind: "DaemonSet", shortNames: []string{"daemon", "ads"},
			columns: []string{"DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES"},
		},
		{
			name: "podunavailablebudgets.policy.kruise.io", kind: "PodUnavailableBudget", shortNames: []string{"pub"},
			columns: []string{"Allowed", "Current", "Desired", "Total"},
		},
	}
	for _, w := range want {
		t.Run(w.kind, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := k8s.Get(context.Background(), client.ObjectKey{Name: w.name}, crd); err != nil {
				t.Fatal(err)
			}
			established := false
			for _, c := range crd.Status.Conditions {
				established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
			}
			if !established {
				t.Errorf("not Established: %+v", crd.Status.Conditions)
			}
			if crd.Spec.Names.Kind != w.kind || !slices.Equal(crd.Spec.Names.ShortNames, w.shortNames) || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
				t.Errorf("names %+v, scope %s", crd.Spec.Names, crd.Spec.Scope)
			}
			// Both versions served, v1beta1 stored (as OpenKruise's module
			// v1.9.0 does), each with the same subresources and columns.
			if len(crd.Spec.Versions) != 2 || crd.Spec.Versions[0].Name != "v1alpha1" || crd.Spec.Versions[1].Name != "v1beta1" ||
				crd.Spec.Versions[0].Storage || !crd.Spec.Versions[1].Storage || !crd.Spec.Versions[0].Served || !crd.Spec.Versions[1].Served {
				t.Fatalf("versions: %+v", crd.Spec.Versions)
			}
			for _, v := range crd.Spec.Versions {
				if v.Subresources == nil || v.Subresources.Status == nil {
					t.Errorf("%s: no status subresource", v.Name)
					continue
				}
				if diff := cmp.Diff(w.scale, v.Subresources.Scale); diff != "" {
					t.Errorf("%s: scale subresource (-want +got):\n%s", v.Name, diff)
				}
				var columns []string
				for _, c := range v.AdditionalPrinterColumns {
					columns = append(columns, c.Name)
				}
				if !slices.Equal(columns, w.columns) {
					t.Errorf("%s: printer columns: got %v, want %v", v.Name, columns, w.columns)
				}
			}
		})
	}
}

// TestObjectsRoundTripWithEveryField stores objects and reads them back: the
// seed manifests, and fixtures that set every field of each API. Spec and
// status must come back exactly as sent.
func TestObjectsRoundTripWithEveryField(t *testing.T) {
	seed001, seed002 := &appsv1alpha1.CloneSet{}, &appsv1alpha1.CloneSet{}
	loadSample(t, "cloneset-lifecycle-demo.yaml", seed001)
	loadSample(t, "cloneset-prenormal.yaml", seed002)
	for _, full := range []any{fullCloneSet(), fullPersistentPodState(), fullPodUnavailableBudget()} {
		requireAllFieldsSet(t, full)
	}
	for _, tc := range []struct {
		name string
		obj  client.Object
		// spec and status pick the parts compared.
		spec, status func(client.Object) any
	}{
		{"seed 001 CloneSet", seed001, cloneSetSpec, cloneSetStatus},
		{"seed 002 PreNormal CloneSet", seed002, cloneSetSpec, cloneSetStatus},
		// v1alpha1 spells the image pre-download settings as annotations;
		// the strategy's own fields (the v1beta1 spelling, shared through
		// the pub package) are dropped on the way to the stored v1beta1,
		// as OpenKruise's conversion drops them (docs/compatibility.md).
		{"CloneSet with every field", fullCloneSet(), func(o client.Object) any {
			spec := o.(*appsv1alpha1.CloneSet).Spec.DeepCopy()
			if s := spec.UpdateStrategy.InPlaceUpdateStrategy; s != nil {
				s.ImagePreDownloadParallelism, s.ImagePreDownloadTimeoutSeconds, s.ImagePreDownloadMinUpdatedReadyPods = nil, nil, nil
			}
			return spec
		}, cloneSetStatus},
		{"PersistentPodState with every field", fullPersistentPodState(),
			func(o client.Object) any { return o.(*appsv1alpha1.PersistentPodState).Spec },
			func(o client.Object) any { return o.(*appsv1alpha1.PersistentPodState).Status }},
		{"PodUnavailableBudget with every field", fullPodUnavailableBudget(),
			func(o client.Object) any { return o.(*policyv1alpha1.PodUnavailableBudget).Spec },
			func(o client.Object) any { return o.(*policyv1alpha1.PodUnavailableBudget).Status }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			sent := tc.obj.DeepCopyObject().(client.Object)
			obj := tc.obj.DeepCopyObject().(client.Object)
			obj.SetNamespace(newNamespace(t))
			if err := k8s.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			// Status is ignored on create; write it through the subresource.
			withStatus := sent.DeepCopyObject().(client.Object)
			withStatus.SetNamespace(obj.GetNamespace())
			withStatus.SetResourceVersion(obj.GetResourceVersion())
			if err := k8s.Status().Update(ctx, withStatus); err != nil {
				t.Fatal(err)
			}
			got := sent.DeepCopyObject().(client.Object)
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(tc.spec(sent), tc.spec(got)) {
				t.Errorf("spec changed in the round trip (-sent +stored):\n%s", cmp.Diff(tc.spec(sent), tc.spec(got)))
			}
			if !apiequality.Semantic.DeepEqual(tc.status(sent), tc.status(got)) {
				t.Errorf("status changed in the round trip (-sent +stored):\n%s", cmp.Diff(tc.status(sent), tc.status(got)))
			}
		})
	}
}

func cloneSetSpec(o client.Object) any   { return o.(*appsv1alpha1.CloneSet).Spec }
func cloneSetStatus(o client.Object) any { return o.(*appsv1alpha1.CloneSet).Status }

func TestKubectlScalesACloneSetThroughTheScaleSubresource(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	cs := &appsv1alpha1.CloneSet{}
	loadSample(t, "cloneset-lifecycle-demo.yaml", cs)
	cs.Namespace = ns
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	cs.Status = appsv1alpha1.CloneSetStatus{Replicas: 2, LabelSelector: "app=nginx"}
	if err := k8s.Status().Update(ctx, cs); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", ns, "scale", "clone/"+cs.Name, "--replicas=5").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl scale: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "scaled") {
		t.Errorf("kubectl scale said %q", out)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cs), cs); err != nil {
		t.Fatal(err)
	}
	if *cs.Spec.Replicas != 5 {
		t.Errorf("spec.replicas = %d after kubectl scale --replicas=5", *cs.Spec.Replicas)
	}
	scale := &autoscalingv1.Scale{}
	if err := k8s.SubResource("scale").Get(ctx, cs, scale); err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 5 || scale.Status.Replicas != 2 || scale.Status.Selector != "app=nginx" {
		t.Errorf("scale subresource: spec %+v status %+v", scale.Spec, scale.Status)
	}
}

// TestSchemaRejectsMalformedObjects: what the schema can tell is wrong comes
// back as a 422 that names the field and says why.
func TestSchemaRejectsMalformedObjects(t *testing.T) {
	const cloneSet = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","metadata":{"name":"bad"},"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"main","image":"nginx"}]}}%s}}`
	const pps = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"PersistentPodState","metadata":{"name":"bad"},"spec":{%s}}`
	const pub = `{"apiVersion":"policy.kruise.io/v1alpha1","kind":"PodUnavailableBudget","metadata":{"name":"bad"},"spec":{"selector":{"matchLabels":{"app":"x"}}%s}}`
	const target = `"targetRef":{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web"}`
	for _, tc := range []struct {
		name, object, field, message string
	}{
		{"replicas not an integer", fmt.Sprintf(cloneSet, `,"replicas":"three"`),
			"spec.replicas", `Invalid value: "string": spec.replicas in body must be of type integer: "string"`},
		{"selector missing", `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","metadata":{"name":"bad"},"spec":{"template":{}}}`,
			"spec.selector", "Required value"},
		{"template missing", `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","metadata":{"name":"bad"},"spec":{"selector":{"matchLabels":{"app":"x"}}}}`,
			"spec.template", "Required value"},
		{"partition neither integer nor string", fmt.Sprintf(cloneSet, `,"updateStrategy":{"partition":true}`),
			"spec.updateStrategy.partition", "must be of type integer"},
		{"maxSurge an object", fmt.Sprintf(cloneSet, `,"updateStrategy":{"maxSurge":{"value":1}}`),
			"spec.updateStrategy.maxSurge", "must be of type integer"},
		{"scatter term without key", fmt.Sprintf(cloneSet, `,"updateStrategy":{"scatterStrategy":[{"value":"a"}]}`),
			"spec.updateStrategy.scatterStrategy[0].key", "Required value"},
		{"weight term without weight", fmt.Sprintf(cloneSet, `,"updateStrategy":{"priorityStrategy":{"weightPriority":[{"matchSelector":{}}]}}`),
			"spec.updateStrategy.priorityStrategy.weightPriority[0].weight", "Required value"},
		{"markPodNotReady not a boolean", fmt.Sprintf(cloneSet, `,"lifecycle":{"preDelete":{"markPodNotReady":"yes"}}`),
			"spec.lifecycle.preDelete.markPodNotReady", "must be of type boolean"},
		{"finalizersHandler not a list", fmt.Sprintf(cloneSet, `,"lifecycle":{"inPlaceUpdate":{"finalizersHandler":"example.com/x"}}`),
			"spec.lifecycle.inPlaceUpdate.finalizersHandler", "must be of type array"},
		{"minReadySeconds a fraction", fmt.Sprintf(cloneSet, `,"minReadySeconds":1.5`),
			"spec.minReadySeconds", "must be of type int32"},
		{"PersistentPodState without targetRef", fmt.Sprintf(pps, `"requiredPersistentTopology":{"nodeTopologyKeys":["topology.kubernetes.io/zone"]}`),
			"spec.targetRef", "Required value"},
		{"PersistentPodState preferred term without weight", fmt.Sprintf(pps, target+`,"preferredPersistentTopology":[{"preference":{"nodeTopologyKeys":["a"]}}]`),
			"spec.preferredPersistentTopology[0].weight", "Required value"},
		{"PodUnavailableBudget maxUnavailable a list", fmt.Sprintf(pub, `,"maxUnavailable":[1]`),
			"spec.maxUnavailable", "must be of type integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := json.Unmarshal([]byte(tc.object), &obj.Object); err != nil {
				t.Fatal(err)
			}
			obj.SetNamespace(newNamespace(t))
			err := k8s.Create(context.Background(), obj)
			requireInvalid(t, err, tc.field, tc.message)
		})
	}
}

// TestInvalidUpdateLeavesTheStoredObjectUnchanged: a rejected update is
// rejected whole.
func TestInvalidUpdateLeavesTheStoredObjectUnchanged(t *testing.T) {
	ctx := context.Background()
	cs := &appsv1alpha1.CloneSet{}
	loadSample(t, "cloneset-lifecycle-demo.yaml", cs)
	cs.Namespace = newNamespace(t)
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	before := cs.DeepCopy()
	patch := []byte(`{"spec":{"replicas":7,"updateStrategy":{"partition":true}}}`)
	err := k8s.Patch(ctx, cs, client.RawPatch("application/merge-patch+json", patch))
	requireInvalid(t, err, "spec.updateStrategy.partition", "must be of type integer")

	after := &appsv1alpha1.CloneSet{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cs), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || *after.Spec.Replicas != 2 {
		t.Errorf("rejected update was partly applied: resourceVersion %s→%s, replicas %d", before.ResourceVersion, after.ResourceVersion, *after.Spec.Replicas)
	}
}

func requireInvalid(t *testing.T, err error, field, message string) {
	t.Helper()
	if err == nil {
		t.Fatal("accepted; want a 422")
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v (reason %s), want 422 Invalid", err, apierrors.ReasonForError(err))
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Code != 422 || status.Status().Details == nil {
		t.Fatalf("no 422 status with details: %#v", err)
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == field && strings.Contains(cause.Message, message) {
			return
		}
	}
	t.Fatalf("no cause at %s containing %q; causes: %+v", field, message, status.Status().Details.Causes)
}
