package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is what the agent asks of the node's container runtime.
type Runtime interface {
	// Container reports a running container by its ID in a pod's status
	// (containerd://…); false when the runtime has no such container
	// running.
	Container(ctx context.Context, statusID string) (Container, bool, error)
	// Stop stops a container, giving it timeout seconds after SIGTERM.
	Stop(ctx context.Context, statusID string, timeout int64) error
}

// CRI is the Runtime of a CRI endpoint (unix:///run/containerd/containerd.sock).
type CRI struct {
	conn *grpc.ClientConn
	rt   runtimeapi.RuntimeServiceClient
}

// DialCRI connects to endpoint and checks that it answers the CRI.
func DialCRI(ctx context.Context, endpoint string) (*CRI, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	c := &CRI{conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn)}
	if _, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the container runtime at %s does not answer: %w", endpoint, err)
	}
	return c, nil
}

// Close closes the connection.
func (c *CRI) Close() error { return c.conn.Close() }

// Container reads the container's env from the runtime's verbose status:
// the config the kubelet created it with (containerd's "config.envs"),
// else the OCI spec's process env.
func (c *CRI) Container(ctx context.Context, statusID string) (Container, bool, error) {
	resp, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: runtimeID(statusID), Verbose: true})
	if status.Code(err) == codes.NotFound {
		return Container{}, false, nil
	}
	if err != nil {
		return Container{}, false, err
	}
	if resp.Status == nil || resp.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return Container{}, false, nil
	}
	env, err := envOfInfo(resp.Info["info"])
	if err != nil {
		return Container{}, false, fmt.Errorf("container %s: %w", statusID, err)
	}
	return Container{Env: env}, true, nil
}

// Stop stops the container; the kubelet starts it again (restartPolicy
// Always), with the env of the pod's metadata now.
func (c *CRI) Stop(ctx context.Context, statusID string, timeout int64) error {
	_, err := c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: runtimeID(statusID), Timeout: timeout})
	return err
}

// runtimeID is a status's container ID without its runtime's scheme.
func runtimeID(statusID string) string {
	if _, id, ok := strings.Cut(statusID, "://"); ok {
		return id
	}
	return statusID
}

// envOfInfo reads a container's env from a runtime's verbose info; the
// last definition of a name wins, as in a process's environment.
func envOfInfo(info string) (map[string]string, error) {
	var v struct {
		Config *struct {
			Envs []struct {
				Key   string `json:"key"`
				Value string `json:"value"`
			} `json:"envs"`
		} `json:"config"`
		RuntimeSpec *struct {
			Process *struct {
				Env []string `json:"env"`
			} `json:"process"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(info), &v); err != nil {
		return nil, fmt.Errorf("reading the runtime's verbose info: %w", err)
	}
	env := map[string]string{}
	switch {
	case v.Config != nil:
		for _, kv := range v.Config.Envs {
			env[kv.Key] = kv.Value
		}
	case v.RuntimeSpec != nil && v.RuntimeSpec.Process != nil:
		for _, kv := range v.RuntimeSpec.Process.Env {
			k, val, _ := strings.Cut(kv, "=")
			env[k] = val
		}
	default:
		return nil, fmt.Errorf("the runtime's verbose info has neither config nor runtimeSpec")
	}
	return env, nil
}
