package planner

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

func progressing(reason string, status corev1.ConditionStatus, age time.Duration) []appsv1alpha1.CloneSetCondition {
	t := metav1.NewTime(now.Add(-age))
	return []appsv1alpha1.CloneSetCondition{{Type: appsv1alpha1.CloneSetConditionTypeProgressing, Status: status, Reason: reason, LastUpdateTime: t, LastTransitionTime: t}}
}

func TestProgressingCondition(t *testing.T) {
	rolling := func() Snapshot { // 2 pods, one updated: a rollout under way
		s := snapshot(cloneSet(2, "", "1", ""), readyPod("a", newRev), readyPod("b", oldRev))
		s.CloneSet.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
		return s
	}
	for _, tc := range []struct {
		name       string
		s          Snapshot
		previous   []appsv1alpha1.CloneSetCondition
		wantReason string
		wantStatus corev1.ConditionStatus
		wantFresh  bool // lastUpdateTime is now
	}{
		{"a rollout starts the clock", rolling(), nil, appsv1alpha1.CloneSetProgressUpdated, corev1.ConditionTrue, true},
		// OpenKruise would say ProgressDeadlineExceeded here: the old
		// Available condition is older than the deadline. We start the
		// clock with the rollout.
		{"a new rollout after a long Available", rolling(), progressing(appsv1alpha1.CloneSetAvailable, corev1.ConditionTrue, time.Hour),
			appsv1alpha1.CloneSetProgressUpdated, corev1.ConditionTrue, true},
		{"within the deadline", rolling(), progressing(appsv1alpha1.CloneSetProgressUpdated, corev1.ConditionTrue, 30*time.Second),
			appsv1alpha1.CloneSetProgressUpdated, corev1.ConditionTrue, false},
		{"past the deadline", rolling(), progressing(appsv1alpha1.CloneSetProgressUpdated, corev1.ConditionTrue, 2*time.Minute),
			appsv1alpha1.CloneSetProgressDeadlineExceeded, corev1.ConditionFalse, true},
		{"exceeded sticks while rolling", rolling(), progressing(appsv1alpha1.CloneSetProgressDeadlineExceeded, corev1.ConditionFalse, time.Hour),
			appsv1alpha1.CloneSetProgressDeadlineExceeded, corev1.ConditionFalse, false},
		{"available ends it", func() Snapshot {
			s := snapshot(cloneSet(2, "", "1", ""), readyPod("a", newRev), readyPod("b", newRev))
			s.CloneSet.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
			s.CurrentRevision = newRev
			return s
		}(), progressing(appsv1alpha1.CloneSetProgressDeadlineExceeded, corev1.ConditionFalse, time.Hour),
			appsv1alpha1.CloneSetAvailable, corev1.ConditionTrue, true},
		{"paused", func() Snapshot {
			s := rolling()
			s.CloneSet.Spec.UpdateStrategy.Paused = true
			return s
		}(), nil, appsv1alpha1.CloneSetProgressPaused, corev1.ConditionTrue, true},
		{"at the partition", func() Snapshot {
			s := rolling()
			s.CloneSet.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(1))
			return s
		}(), nil, appsv1alpha1.CloneSetProgressPartitionAvailable, corev1.ConditionTrue, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := Status(tc.s, appsv1alpha1.CloneSetStatus{Conditions: tc.previous}, 0, "app=web")
			c := findCondition(&st, appsv1alpha1.CloneSetConditionTypeProgressing)
			if c == nil || c.Reason != tc.wantReason || c.Status != tc.wantStatus || c.LastUpdateTime.Time.Equal(now) != tc.wantFresh {
				t.Errorf("got %+v; want %s/%s fresh=%v", c, tc.wantStatus, tc.wantReason, tc.wantFresh)
			}
		})
	}
	s := rolling()
	s.CloneSet.Spec.ProgressDeadlineSeconds = nil
	if st, _ := Status(s, appsv1alpha1.CloneSetStatus{Conditions: progressing(appsv1alpha1.CloneSetAvailable, corev1.ConditionTrue, 0)}, 0, ""); len(st.Conditions) != 0 {
		t.Errorf("without progressDeadlineSeconds: %+v", st.Conditions)
	}
}

func TestRecordOutcome(t *testing.T) {
	failedScale, failedUpdate := appsv1alpha1.CloneSetConditionFailedScale, appsv1alpha1.CloneSetConditionFailedUpdate
	quota := errors.New("exceeded quota")
	for _, tc := range []struct {
		name   string
		before []appsv1alpha1.CloneSetConditionType
		phase  Phase
		err    error
		want   []appsv1alpha1.CloneSetConditionType
	}{
		{"a failed creation", nil, PhaseScale, quota, []appsv1alpha1.CloneSetConditionType{failedScale}},
		{"a failed update", nil, PhaseUpdate, quota, []appsv1alpha1.CloneSetConditionType{failedUpdate}},
		{"a failed refresh is an update failure", nil, PhaseRefresh, quota, []appsv1alpha1.CloneSetConditionType{failedUpdate}},
		{"scaling succeeds", []appsv1alpha1.CloneSetConditionType{failedScale, failedUpdate}, PhaseScale, nil, []appsv1alpha1.CloneSetConditionType{failedUpdate}},
		// The step that scaled lost its status write: the next one has
		// nothing to scale, and the condition must still go.
		{"scaling has nothing left to do", []appsv1alpha1.CloneSetConditionType{failedScale}, PhaseRefresh, nil, nil},
		{"an update step clears both", []appsv1alpha1.CloneSetConditionType{failedScale, failedUpdate}, PhaseUpdate, nil, nil},
		{"a refresh leaves an update failure", []appsv1alpha1.CloneSetConditionType{failedUpdate}, PhaseRefresh, nil, []appsv1alpha1.CloneSetConditionType{failedUpdate}},
		{"a scale failure leaves an update failure", []appsv1alpha1.CloneSetConditionType{failedUpdate}, PhaseScale, quota, []appsv1alpha1.CloneSetConditionType{failedUpdate, failedScale}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &appsv1alpha1.CloneSetStatus{}
			for _, c := range tc.before {
				SetFailure(st, c, errors.New("earlier"), now.Add(-time.Hour))
			}
			RecordOutcome(st, tc.phase, tc.err, now)
			var got []appsv1alpha1.CloneSetConditionType
			for _, c := range st.Conditions {
				got = append(got, c.Type)
				if c.Type == failedScale && tc.err != nil && tc.phase == PhaseScale && c.Message != tc.err.Error() {
					t.Errorf("message %q, want %q", c.Message, tc.err)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("conditions %v, want %v", got, tc.want)
			}
		})
	}
}
