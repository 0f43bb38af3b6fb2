// Command registry-operator is seed 001's hook operator on Lifeline's SDK, with
// a Consul agent as the registry: it registers each pod of a CloneSet or an
// Advanced StatefulSet once available, takes it out before an in-place update
// and puts it back after, and takes it out before deletion; the SDK calls these
// in time and flips the hook labels.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"

	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lifeline-k8s/lifeline/pkg/hook"
)

var consul = flag.String("consul", "http://127.0.0.1:8500", "Address of the Consul agent's HTTP API.")

func put(ctx context.Context, path string, body any) error {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, *consul+path, bytes.NewReader(data))
	resp, err := http.DefaultClient.Do(req)
	if err == nil && resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotFound {
		err = fmt.Errorf("PUT %s: %s", path, resp.Status)
	}
	if resp != nil {
		resp.Body.Close()
	}
	return err
}

func register(ctx context.Context, e hook.Event) error { // postRegistry
	return put(ctx, "/v1/agent/service/register", map[string]any{"ID": e.Pod.Namespace + "-" + e.Pod.Name,
		"Name": e.Workload.Name(), "Address": e.Pod.Status.PodIP, "Meta": map[string]string{"revision": e.Revision, "uid": string(e.Pod.UID)}})
}

func unregister(ctx context.Context, e hook.Event) error { // postFailOver, postUnregister
	return put(ctx, "/v1/agent/service/deregister/"+e.Pod.Namespace+"-"+e.Pod.Name, nil)
}

func main() {
	flag.Parse()
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err == nil {
		err = hook.Add(mgr, hook.Handlers{Registered: register, BeforeUpdate: unregister, AfterUpdate: register, BeforeDelete: unregister},
			hook.Options{Name: "seed001", Follow: []hook.Follow{{Kind: hook.KindCloneSet}, {Kind: hook.KindStatefulSet}}})
	}
	if err == nil {
		err = mgr.Start(ctrl.SetupSignalHandler())
	}
	if err != nil {
		log.Fatal(err)
	}
}
