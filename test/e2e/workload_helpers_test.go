package e2e

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// updateWorkload applies change to the latest object, retrying conflicts
// with the controller's own writes.
func updateWorkload[T ctrlclient.Object](t *testing.T, obj T, change func(T)) {
	t.Helper()
	eventually(t, 30*time.Second, "update "+kindOf(obj)+" "+obj.GetName(), func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error(), nil
		}
		change(obj)
		err := k8s.Update(ctx, obj)
		return err == nil, fmt.Sprint(err), nil
	})
}

// waitWorkload polls until ok holds for the object as read; a timeout
// shows its generation and status as last read.
func waitWorkload[T ctrlclient.Object](t *testing.T, obj T, what string, ok func(T) bool) {
	t.Helper()
	seen := "nothing yet"
	eventually(t, 2*time.Minute, what, func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj); err != nil {
			return false, seen, nil
		}
		seen = fmt.Sprintf("generation %d, status %+v", obj.GetGeneration(), reflect.ValueOf(obj).Elem().FieldByName("Status").Interface())
		return ok(obj), seen, nil
	})
}

func kindOf(obj ctrlclient.Object) string { return reflect.TypeOf(obj).Elem().Name() }

// The helpers of each workload kind.
var (
	updateCloneSet            = updateWorkload[*appsv1alpha1.CloneSet]
	waitCloneSet              = waitWorkload[*appsv1alpha1.CloneSet]
	updateAdvancedStatefulSet = updateWorkload[*appsv1beta1.StatefulSet]
	waitAdvancedStatefulSet   = waitWorkload[*appsv1beta1.StatefulSet]
	updateAdvancedDaemonSet   = updateWorkload[*appsv1beta1.DaemonSet]
	waitAdvancedDaemonSet     = waitWorkload[*appsv1beta1.DaemonSet]
)
