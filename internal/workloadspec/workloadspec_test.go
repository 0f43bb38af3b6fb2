package workloadspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// OpenKruise's defaults for every workload: images always pulled (an
// in-place update behind the same tag must pull), the pod spec's and the
// probes' hand-written defaults, and a claim template's phase only, not
// its volumeMode (which would change the revision of a migrated
// workload; the golden vectors in internal/revision check the hashes).
func TestDefaultTemplates(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27",
		Ports:          []corev1.ContainerPort{{ContainerPort: 80}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/"}}}}}}}
	claims := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	DefaultTemplates(tmpl, claims)
	spec, c := tmpl.Spec, tmpl.Spec.Containers[0]
	for what, ok := range map[string]bool{
		"restartPolicy Always":            spec.RestartPolicy == corev1.RestartPolicyAlways,
		"dnsPolicy ClusterFirst":          spec.DNSPolicy == corev1.DNSClusterFirst,
		"imagePullPolicy Always":          c.ImagePullPolicy == corev1.PullAlways,
		"port protocol TCP":               c.Ports[0].Protocol == corev1.ProtocolTCP,
		"probe period 10 s":               c.ReadinessProbe.PeriodSeconds == 10,
		"probe HTTP scheme":               c.ReadinessProbe.HTTPGet.Scheme == corev1.URISchemeHTTP,
		"claim phase Pending":             claims[0].Status.Phase == corev1.ClaimPending,
		"no volumeMode on the claim":      claims[0].Spec.VolumeMode == nil,
		"termination message path":        c.TerminationMessagePath == corev1.TerminationMessagePathDefault,
		"terminationGracePeriod 30 s":     ptr.Deref(spec.TerminationGracePeriodSeconds, 0) == 30,
		"schedulerName default-scheduler": spec.SchedulerName == corev1.DefaultSchedulerName,
	} {
		if !ok {
			t.Errorf("not defaulted: %s", what)
		}
	}
	pinned := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27", ImagePullPolicy: corev1.PullIfNotPresent}}}}
	DefaultTemplates(pinned, nil)
	if got := pinned.Spec.Containers[0].ImagePullPolicy; got != corev1.PullIfNotPresent {
		t.Errorf("a set pull policy became %s", got)
	}
}

// The template is validated as Kubernetes validates a pod template, with
// each claim template as a volume, plus OpenKruise's own two rules; every
// error is reported with its path.
func TestValidateTemplate(t *testing.T) {
	valid := func() *corev1.PodTemplateSpec {
		tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}}
		DefaultTemplates(tmpl, nil)
		return tmpl
	}
	claims := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	path := field.NewPath("spec", "template")
	if errs := ValidateTemplate(valid(), claims, nil, "cloneset", path); len(errs) != 0 {
		t.Fatalf("a valid template with a mount of its claim: %v", errs)
	}
	if errs := ValidateTemplate(valid(), nil, nil, "cloneset", path); len(errs) == 0 {
		t.Error("a mount of a volume nobody declares was accepted")
	}
	bad := valid()
	bad.Spec.RestartPolicy = corev1.RestartPolicyNever
	bad.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
	bad.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	errs := ValidateTemplate(bad, claims, nil, "cloneset", path)
	for _, want := range []string{
		"spec.template.spec.restartPolicy: Unsupported value: \"Never\"",
		"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in cloneset is not Supported",
		"spec.template.spec.volumes[1].name: Duplicate value: \"data\"",
	} {
		if !strings.Contains(errs.ToAggregate().Error(), want) {
			t.Errorf("errors %v: want %q among them", errs, want)
		}
	}
}

// OpenKruise's messages for a priority strategy, first problem only; a
// weight of 0 passes as it does there.
func TestPriorityError(t *testing.T) {
	sel := metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	for _, c := range []struct {
		ps   *pub.UpdatePriorityStrategy
		want string
	}{
		{nil, ""},
		{&pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{{Weight: 0, MatchSelector: sel}}}, ""},
		{&pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{{Weight: 1, MatchSelector: sel}}, OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "k"}}}, "only one of weightPriority and orderPriority can be used"},
		{&pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{{Weight: 101, MatchSelector: sel}}}, "weight must be valid number in the range 1-100"},
		{&pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{{Weight: 5}}}, "selector can not be empty"},
		{&pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{{Weight: 5, MatchSelector: metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}}}, "invalid selector"},
		{&pub.UpdatePriorityStrategy{OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: ""}}}, "order key can not be empty"},
	} {
		if got := PriorityError(c.ps); !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("PriorityError(%+v) = %q, want %q", c.ps, got, c.want)
		}
	}
}

// A hook whose label or finalizer no pod could carry would hold its pods
// forever: refused, each at its path.
func TestValidateLifecycle(t *testing.T) {
	l := &pub.Lifecycle{
		PreDelete:     &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/drain": "true"}, FinalizersHandler: []string{"example.com/registry"}},
		InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"bad key!": "x"}, FinalizersHandler: []string{"no-domain"}},
	}
	errs := ValidateLifecycle(l, field.NewPath("spec", "lifecycle"))
	got := errs.ToAggregate().Error()
	for _, want := range []string{"spec.lifecycle.inPlaceUpdate.labelsHandler", "spec.lifecycle.inPlaceUpdate.finalizersHandler[0]"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %q: want one at %s", got, want)
		}
	}
	if len(errs) != 2 || strings.Contains(got, "preDelete") {
		t.Errorf("errors %q: want exactly the two of inPlaceUpdate", got)
	}
	if errs := ValidateLifecycle(nil, field.NewPath("spec", "lifecycle")); errs != nil {
		t.Errorf("no lifecycle: %v", errs)
	}
}

// A pod's volumes: one per claim template, pointing at the pod's claim,
// in place of a template volume of the same name; the others follow.
func TestClaimVolumes(t *testing.T) {
	volumes := []corev1.Volume{{Name: "data"}, {Name: "cache"}}
	claims := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	got := ClaimVolumes(volumes, claims, func(name string) string { return name + "-web-0" })
	if len(got) != 2 || got[0].Name != "data" || got[0].PersistentVolumeClaim == nil || got[0].PersistentVolumeClaim.ClaimName != "data-web-0" || got[1].Name != "cache" {
		t.Errorf("volumes %+v", got)
	}
	if got := ClaimVolumes(volumes, nil, nil); len(got) != 2 || got[0].PersistentVolumeClaim != nil {
		t.Errorf("without claim templates: %+v", got)
	}
}
