// Command seed001operator is the hook operator of seed 001 ("CloneSet
// lifecycle: insert customized logic into pod lifecycle") as the seed
// writes it: plain controller-runtime, its own predicates, flipping the
// hook labels itself, no Lifeline SDK. The end-to-end tests run it against
// a Lifeline CloneSet to show that an existing operator works unchanged.
// Its postRegistry, postFailOver and postUnregister speak to a Consul agent.
//
// Differences from the seed's text: the Reconcile signature takes a
// context (controller-runtime's since v0.7), IsPreDeleteHooked's
// DeleteHookLabel typo is spelled deleteHookLabel, and the lifecycle
// constants come from Lifeline's API module, whose names and values are
// OpenKruise's.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappspub "github.com/lifeline-k8s/lifeline/api/apps/pub"
)

const (
	deleteHookLabel  = "example.com/unready-blocker-delete"
	inPlaceHookLabel = "example.com/unready-blocker-inplace"
	newlyCreateLabel = "example.com/newly-create"
)

var consul = flag.String("consul", "http://127.0.0.1:8500", "Consul agent address.")

type SampleReconciler struct {
	client.Client
}

func (r *SampleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &v1.Pod{}
	if err := r.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	switchLabel := func(pod *v1.Pod, key, value string) error {
		body := fmt.Sprintf(`{"metadata":{"labels":{"%s":"%s"}}}`, key, value)
		if err := r.Patch(context.TODO(), pod, client.RawPatch(types.StrategicMergePatchType, []byte(body))); err != nil {
			return err
		}
		return nil
	}

	/*
		Pod Lifecycle Hook Logic
	*/
	switch {
	// handle newly-created pod
	case IsNewlyCreateHooked(pod):
		// register this pod to your service discovery center
		if err := postRegistry(pod); err != nil {
			return reconcile.Result{}, err
		}
		if err := switchLabel(pod, newlyCreateLabel, "false"); err != nil {
			return reconcile.Result{}, err
		}

	// handle the pod which is preparing to inplace update
	case IsPreUpdateHooked(pod):
		// let the service discover center fail over this pod
		if err := postFailOver(pod); err != nil {
			return reconcile.Result{}, err
		}
		if err := switchLabel(pod, inPlaceHookLabel, "false"); err != nil {
			return reconcile.Result{}, err
		}

	// handle the pod which is updated completely
	case IsUpdatedHooked(pod):
		// register this pod again to your service discovery center
		if err := postRegistry(pod); err != nil {
			return reconcile.Result{}, err
		}
		if err := switchLabel(pod, inPlaceHookLabel, "true"); err != nil {
			return reconcile.Result{}, err
		}

	// handle the pod which is preparing to delete
	case IsPreDeleteHooked(pod):
		// just unregister this pod from your service discovery center
		if err := postUnregister(pod); err != nil {
			return reconcile.Result{}, err
		}
		if err := switchLabel(pod, deleteHookLabel, "false"); err != nil {
			return reconcile.Result{}, err
		}
	}

	return ctrl.Result{}, nil
}

func IsNewlyCreateHooked(pod *v1.Pod) bool {
	return kruiseappspub.LifecycleStateType(pod.Labels[kruiseappspub.LifecycleStateKey]) == kruiseappspub.LifecycleStateNormal && pod.Labels[newlyCreateLabel] == "true" && IsPodReady(pod)
}

func IsPreUpdateHooked(pod *v1.Pod) bool {
	return kruiseappspub.LifecycleStateType(pod.Labels[kruiseappspub.LifecycleStateKey]) == kruiseappspub.LifecycleStatePreparingUpdate && pod.Labels[inPlaceHookLabel] == "true"
}

func IsUpdatedHooked(pod *v1.Pod) bool {
	return kruiseappspub.LifecycleStateType(pod.Labels[kruiseappspub.LifecycleStateKey]) == kruiseappspub.LifecycleStateUpdated && pod.Labels[inPlaceHookLabel] == "false" && IsPodReady(pod)
}

func IsPreDeleteHooked(pod *v1.Pod) bool {
	return kruiseappspub.LifecycleStateType(pod.Labels[kruiseappspub.LifecycleStateKey]) == kruiseappspub.LifecycleStatePreparingDelete && pod.Labels[deleteHookLabel] == "true"
}

func IsPodReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// postRegistry, postFailOver and postUnregister: "send a http/https request
// to the service discovery center".
func postRegistry(pod *v1.Pod) error {
	return put("/v1/agent/service/register", map[string]any{"ID": pod.Namespace + "-" + pod.Name, "Name": "seed001",
		"Address": pod.Status.PodIP, "Meta": map[string]string{"revision": pod.Labels["controller-revision-hash"], "uid": string(pod.UID)}})
}

func postFailOver(pod *v1.Pod) error { return postUnregister(pod) }

func postUnregister(pod *v1.Pod) error {
	return put("/v1/agent/service/deregister/"+pod.Namespace+"-"+pod.Name, nil)
}

func put(path string, body any) error {
	data, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPut, *consul+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("PUT %s: %s", path, resp.Status)
	}
	return nil
}

func main() {
	flag.Parse()
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err == nil {
		err = ctrl.NewControllerManagedBy(mgr).For(&v1.Pod{}).Complete(&SampleReconciler{Client: mgr.GetClient()})
	}
	if err == nil {
		err = mgr.Start(ctrl.SetupSignalHandler())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
