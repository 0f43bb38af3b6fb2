package budget

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func pct(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }

// The reference's examples (OpenKruise's e2e) and its edges.
func TestDesiredAvailable(t *testing.T) {
	for _, c := range []struct {
		maxU, minA string
		expected   int32
		want       int32
	}{
		{maxU: "25%", expected: 10, want: 7},
		{maxU: "25%", expected: 5, want: 3},
		{maxU: "20%", expected: 10, want: 8},
		{maxU: "0", expected: 1, want: 1},
		{maxU: "100%", expected: 4, want: 0},
		{maxU: "5", expected: 3, want: 0},
		{minA: "50%", expected: 5, want: 3},
		{minA: "7", expected: 3, want: 7}, // not clamped: nothing may go
		{minA: "2", expected: -1, want: 2},
		{maxU: "1", expected: -1, want: 0},
	} {
		spec := policyv1alpha1.PodUnavailableBudgetSpec{}
		if c.maxU != "" {
			spec.MaxUnavailable = pct(c.maxU)
		} else {
			spec.MinAvailable = pct(c.minA)
		}
		got, err := DesiredAvailable(spec, c.expected)
		if err != nil || got != c.want {
			t.Errorf("maxUnavailable %q minAvailable %q of %d: %d %v, want %d", c.maxU, c.minA, c.expected, got, err, c.want)
		}
	}
}

func readyPod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestReady(t *testing.T) {
	for name, c := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"ready":             {readyPod("a"), true},
		"not ready":         {readyPod("a", func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }), false},
		"pending":           {readyPod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), false},
		"being deleted":     {readyPod("a", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} }), false},
		"unavailable label": {readyPod("a", func(p *corev1.Pod) { p.Labels[policyv1alpha1.PodUnavailableLabelPrefix+"x"] = "1" }), false},
		"in its grace period": {readyPod("a", func(p *corev1.Pod) {
			p.Annotations[pub.InPlaceUpdateGraceKey] = `{"revision":"r","containerImages":{"main":"b"},"graceSeconds":5}`
		}), false},
	} {
		if got := Ready(c.pod); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

// OpenKruise's open bug #2175: a CloneSet of 6 (maxUnavailable 0, maxSurge
// 1) whose pods all carry apps.kruise.io/specified-delete surges a 7th; a
// budget of maxUnavailable 1 then allowed 2. The surge adds no room here.
func TestStatusSurgeAddsNoRoom(t *testing.T) {
	var pods []*corev1.Pod
	for i := 0; i < 7; i++ {
		pods = append(pods, readyPod(fmt.Sprintf("p%d", i), func(p *corev1.Pod) { p.Labels["apps.kruise.io/specified-delete"] = "true" }))
	}
	c, err := Status(Snapshot{Spec: policyv1alpha1.PodUnavailableBudgetSpec{MaxUnavailable: pct("1")}, Pods: pods, Expected: 6, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Status; got.UnavailableAllowed != 1 || got.CurrentAvailable != 7 || got.DesiredAvailable != 5 || got.TotalReplicas != 6 {
		t.Errorf("status %+v, want 1 allowed of 7 available, 5 desired, 6 total", got)
	}
}

func TestStatusKeepsRecordsWhileTheyLast(t *testing.T) {
	st := policyv1alpha1.PodUnavailableBudgetStatus{
		DisruptedPods: map[string]metav1.Time{
			"deleting":  metav1.NewTime(now.Add(-5 * time.Second)),  // still counted out
			"stuck":     metav1.NewTime(now.Add(-25 * time.Second)), // expected gone, still here
			"gone-long": metav1.NewTime(now.Add(-time.Second)),      // no such pod any more
		},
		UnavailablePods: map[string]metav1.Time{
			"updating": metav1.NewTime(now.Add(-4 * time.Second)),
			"updated":  metav1.NewTime(now.Add(-11 * time.Second)),
		},
	}
	pods := []*corev1.Pod{readyPod("deleting"), readyPod("stuck"), readyPod("updating"), readyPod("updated"), readyPod("other")}
	c, err := Status(Snapshot{Spec: policyv1alpha1.PodUnavailableBudgetSpec{MaxUnavailable: pct("40%")}, Generation: 3,
		Status: st, Pods: pods, Expected: 5, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got := c.Status
	if len(got.DisruptedPods) != 1 || len(got.UnavailablePods) != 1 || got.CurrentAvailable != 3 || got.DesiredAvailable != 3 ||
		got.UnavailableAllowed != 0 || got.TotalReplicas != 5 || got.ObservedGeneration != 3 {
		t.Errorf("status %+v", got)
	}
	if len(c.NotDeleted) != 1 || c.NotDeleted[0] != "stuck" {
		t.Errorf("not deleted %v", c.NotDeleted)
	}
	if c.RecheckAfter != 6*time.Second {
		t.Errorf("recheck after %v, want 6s (the update record's end)", c.RecheckAfter)
	}
}

func TestProtects(t *testing.T) {
	for _, c := range []struct {
		list string
		op   policyv1alpha1.PubOperation
		want bool
	}{
		{"", policyv1alpha1.PubDeleteOperation, true},
		{"", policyv1alpha1.PubEvictOperation, true},
		{"", policyv1alpha1.PubUpdateOperation, true},
		{"", policyv1alpha1.PubResizeOperation, false},
		{"DELETE", policyv1alpha1.PubEvictOperation, false},
		{"DELETE,RESIZE", policyv1alpha1.PubResizeOperation, true},
	} {
		if got := Protects(map[string]string{policyv1alpha1.PubProtectOperationAnnotation: c.list}, c.op); got != c.want {
			t.Errorf("%q %s: %v", c.list, c.op, got)
		}
	}
}

func budgetWith(allowed, available, desired int32) *policyv1alpha1.PodUnavailableBudget {
	b := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	b.Status = policyv1alpha1.PodUnavailableBudgetStatus{UnavailableAllowed: allowed, CurrentAvailable: available, DesiredAvailable: desired, TotalReplicas: available}
	return b
}

func TestAdmit(t *testing.T) {
	b := budgetWith(1, 4, 3)
	d := Admit(b, readyPod("a"), policyv1alpha1.PubDeleteOperation, now)
	if !d.Allowed || d.Status == nil || d.Status.UnavailableAllowed != 0 || d.Status.DisruptedPods["a"].Time != now {
		t.Fatalf("first delete: %+v", d)
	}
	b.Status = *d.Status
	if d := Admit(b, readyPod("b"), policyv1alpha1.PubEvictOperation, now); d.Allowed || d.Status != nil {
		t.Errorf("second eviction admitted: %+v", d)
	} else if want := "PodUnavailableBudget web allows no more unavailable pods: 4 available, 3 desired, 4 total"; d.Reason != want {
		t.Errorf("reason %q, want %q", d.Reason, want)
	}
	if d := Admit(b, readyPod("a"), policyv1alpha1.PubDeleteOperation, now); !d.Allowed || d.Status != nil {
		t.Errorf("a retried delete of an admitted pod: %+v", d)
	}
	if d := Admit(b, readyPod("c", func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }), policyv1alpha1.PubDeleteOperation, now); !d.Allowed || d.Status != nil {
		t.Errorf("an unready pod: %+v", d)
	}
	if d := Admit(b, readyPod("c", func(p *corev1.Pod) { p.Annotations[policyv1alpha1.PodPubNoProtectionAnnotation] = "true" }), policyv1alpha1.PubDeleteOperation, now); !d.Allowed {
		t.Errorf("a no-protect pod: %+v", d)
	}
	u := Admit(budgetWith(2, 5, 3), readyPod("d"), policyv1alpha1.PubUpdateOperation, now)
	if !u.Allowed || len(u.Status.UnavailablePods) != 1 || len(u.Status.DisruptedPods) != 0 {
		t.Errorf("an update is recorded in unavailablePods: %+v", u.Status)
	}
}

// Racing admissions on one status version: each decides alone, so the
// budget holds only if the status write is conditional on that version;
// given it, however the admissions interleave, the pods admitted never
// exceed unavailableAllowed. This is the model the admission's optimistic
// concurrency must implement.
func TestAdmitUnderOptimisticConcurrency(t *testing.T) {
	for seed := int64(1); seed <= 100; seed++ {
		rng := rand.New(rand.NewSource(seed))
		allowed := int32(rng.Intn(4))
		stored := budgetWith(allowed, 10, 10-allowed)
		version := 0
		admitted := 0
		type attempt struct {
			pod     string
			read    policyv1alpha1.PodUnavailableBudget
			version int
		}
		var inflight []attempt
		for i := 0; i < 12; i++ {
			inflight = append(inflight, attempt{pod: fmt.Sprintf("p%d", i), read: *stored.DeepCopy(), version: version})
		}
		for len(inflight) > 0 {
			i := rng.Intn(len(inflight))
			a := inflight[i]
			d := Admit(&a.read, readyPod(a.pod), policyv1alpha1.PubEvictOperation, now)
			switch {
			case !d.Allowed:
				inflight = append(inflight[:i], inflight[i+1:]...)
			case a.version != version: // the conditional write conflicts: read again
				inflight[i] = attempt{pod: a.pod, read: *stored.DeepCopy(), version: version}
			default:
				stored.Status = *d.Status
				version++
				admitted++
				inflight = append(inflight[:i], inflight[i+1:]...)
			}
		}
		if admitted != int(allowed) {
			t.Fatalf("seed %d: %d admitted with %d allowed", seed, admitted, allowed)
		}
	}
}

func TestUpdateOperation(t *testing.T) {
	base := readyPod("a", func(p *corev1.Pod) {
		p.Labels["app"] = "x"
		p.Spec.Containers = []corev1.Container{{Name: "main", Image: "nginx:1", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}
	})
	with := func(m func(*corev1.Pod)) *corev1.Pod { p := base.DeepCopy(); m(p); return p }
	for name, c := range map[string]struct {
		sub     string
		updated *corev1.Pod
		want    policyv1alpha1.PubOperation
	}{
		"image": {"", with(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:2" }), policyv1alpha1.PubUpdateOperation},
		"toleration": {"", with(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		}), policyv1alpha1.PubUpdateOperation},
		"unavailable label": {"", with(func(p *corev1.Pod) { p.Labels[policyv1alpha1.PodUnavailableLabelPrefix+"drain"] = "1" }), policyv1alpha1.PubUpdateOperation},
		"other label":       {"", with(func(p *corev1.Pod) { p.Labels["tier"] = "web" }), ""},
		"annotation":        {"", with(func(p *corev1.Pod) { p.Annotations["a"] = "b" }), ""},
		"nothing":           {"", base.DeepCopy(), ""},
		"resize": {"resize", with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		}), policyv1alpha1.PubResizeOperation},
		"resize to the same": {"resize", with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.1")
		}), ""},
		"status":               {"status", with(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), ""},
		"ephemeral containers": {"ephemeralcontainers", with(func(p *corev1.Pod) { p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{}} }), ""},
	} {
		if got := UpdateOperation(c.sub, base, c.updated); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
	// A label already there is not a new disruption.
	labelled := with(func(p *corev1.Pod) { p.Labels[policyv1alpha1.PodUnavailableLabelPrefix+"drain"] = "1" })
	if got := UpdateOperation("", labelled, with(func(p *corev1.Pod) {
		p.Labels[policyv1alpha1.PodUnavailableLabelPrefix+"drain"] = "2"
	})); got != "" {
		t.Errorf("relabelled: %q, want none", got)
	}
}

func TestRelatedAnnotations(t *testing.T) {
	const current, deprecated = "pub.kruise.io/related-pub", "kruise.io/related-pub"
	for _, c := range []struct {
		name string
		has  map[string]string
		want map[string]string
	}{
		{"neither: both, naming this budget", nil, map[string]string{current: "b", deprecated: "b"}},
		{"only the v1beta1 key: the other, same value", map[string]string{current: "a"}, map[string]string{deprecated: "a"}},
		{"only the v1alpha1 key: the other, same value", map[string]string{deprecated: "a"}, map[string]string{current: "a"}},
		{"both, naming another budget: nothing", map[string]string{current: "a", deprecated: "a"}, nil},
		{"both, naming this budget: nothing", map[string]string{current: "b", deprecated: "b"}, nil},
		{"both, naming a deleted budget: this one", map[string]string{current: "gone", deprecated: "gone"}, map[string]string{current: "b", deprecated: "b"}},
		{"one naming a deleted budget: both, this one", map[string]string{deprecated: "gone"}, map[string]string{current: "b", deprecated: "b"}},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: c.has}}
		exists := func(n string) bool { return n == "a" || n == "b" }
		if got := RelatedAnnotations("b", pod, exists); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// Records of disruptions that happened go; a record whose pod is absent
// from the cache goes only once the pod cannot be one the cache has not
// seen yet; the counts stay.
func TestDropSettled(t *testing.T) {
	terminating := readyPod("terminating")
	terminating.DeletionTimestamp = ptrTime(now.Add(-time.Second))
	finished := readyPod("finished")
	finished.Status.Phase = corev1.PodSucceeded
	cache := map[string]*corev1.Pod{"active": readyPod("active"), "terminating": terminating, "finished": finished, "updating": readyPod("updating")}
	lookup := func(name string) (*corev1.Pod, bool) { p, ok := cache[name]; return p, ok }
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	st := policyv1alpha1.PodUnavailableBudgetStatus{
		UnavailableAllowed: 3, CurrentAvailable: 10, DesiredAvailable: 7,
		DisruptedPods: map[string]metav1.Time{
			"active": ago(time.Second), "terminating": ago(time.Second), "finished": ago(time.Second),
			"gone": ago(AbsentGrace), "just-recorded": ago(AbsentGrace - time.Second),
		},
		UnavailablePods: map[string]metav1.Time{"updating": ago(time.Second), "gone-too": ago(time.Minute)},
	}
	if n := DropSettled(&st, lookup, now); n != 4 {
		t.Fatalf("dropped %d records, want 4", n)
	}
	var kept []string
	for _, m := range []map[string]metav1.Time{st.DisruptedPods, st.UnavailablePods} {
		for name := range m {
			kept = append(kept, name)
		}
	}
	slices.Sort(kept)
	if want := []string{"active", "just-recorded", "updating"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	if st.UnavailableAllowed != 3 || st.CurrentAvailable != 10 {
		t.Errorf("counts changed: %+v", st)
	}
	if n := DropSettled(&st, lookup, now); n != 0 {
		t.Errorf("a second pass dropped %d more", n)
	}
}

func ptrTime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

// A budget's selector picks the pods it matches; unset, empty or
// unparsable, it picks none (not every pod of the namespace).
func TestSelects(t *testing.T) {
	web := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name     string
		selector *metav1.LabelSelector
		want     bool
	}{
		{"unset", nil, false},
		{"empty", &metav1.LabelSelector{}, false},
		{"unparsable", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}, false},
		{"matching", &metav1.LabelSelector{MatchLabels: web}, true},
		{"another app", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, false},
	} {
		if got := Selects(tc.selector).Matches(labels.Set(web)); got != tc.want {
			t.Errorf("%s: picks the web pod %v, want %v", tc.name, got, tc.want)
		}
	}
}
