package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	// path, args and env start it again (RestartProcess).
	path string
	args []string
	env  []string
	// stopping: a stop is under way (guarded by Cluster.procsMu), so its
	// exit is no failure Exited reports.
	stopping bool
}

// process is the newest start of the named component, or nil.
func (c *Cluster) process(name string) *process {
	c.procsMu.Lock()
	defer c.procsMu.Unlock()
	for i := len(c.procs) - 1; i >= 0; i-- {
		if c.procs[i].name == name {
			return c.procs[i]
		}
	}
	return nil
}

// forget drops p from the cluster's components.
func (c *Cluster) forget(p *process) {
	c.procsMu.Lock()
	defer c.procsMu.Unlock()
	c.procs = slices.DeleteFunc(c.procs, func(q *process) bool { return q == p })
}

// Stop ends every component, newest first, and waits for each to exit;
// the real nodes go first, with what they made outside the cluster's
// folder (StopErrors says what could not be removed).
func (c *Cluster) Stop() {
	c.stopErrs = append(c.stopErrs, c.stopRealNodes()...)
	c.procsMu.Lock()
	procs := c.procs
	for _, p := range procs {
		p.stopping = true
	}
	c.procsMu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	c.procsMu.Lock()
	c.procs = nil
	c.procsMu.Unlock()
}

// StopErrors are what the last Stop could not clean up.
func (c *Cluster) StopErrors() []error { return c.stopErrs }

// StopProcess ends one component with sig and waits for it to exit; it is
// no longer part of the cluster until started again.
func (c *Cluster) StopProcess(name string, sig syscall.Signal) error {
	return c.stopWithin(name, sig, time.Minute)
}

// stopWithin is StopProcess that SIGKILLs the component after grace.
func (c *Cluster) stopWithin(name string, sig syscall.Signal, grace time.Duration) error {
	c.procsMu.Lock()
	var p *process
	for _, q := range c.procs {
		if q.name == name && !q.stopping {
			p = q
			break
		}
	}
	if p != nil {
		p.stopping = true
	}
	c.procsMu.Unlock()
	if p == nil {
		return fmt.Errorf("no component %s", name)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	c.forget(p)
	return nil
}

// Supervise says that the caller restarts the named components when they
// exit (as a kubelet restarts a container), so that their exit does not
// break the cluster (Exited). Call it before anything waits on the
// cluster from another goroutine.
func (c *Cluster) Supervise(names ...string) {
	c.procsMu.Lock()
	defer c.procsMu.Unlock()
	if c.supervised == nil {
		c.supervised = map[string]bool{}
	}
	for _, n := range names {
		c.supervised[n] = true
	}
}

// Signal sends sig to a running component without waiting for it (SIGSTOP
// and SIGCONT pause and resume it; see WaitExit for one that should exit).
func (c *Cluster) Signal(name string, sig syscall.Signal) error {
	if p := c.process(name); p != nil {
		return syscall.Kill(-p.cmd.Process.Pid, sig)
	}
	return fmt.Errorf("no component %s", name)
}

// WaitExit waits up to timeout for a component to exit by itself and, if
// it did, drops it from the cluster (start it again as after StopProcess).
func (c *Cluster) WaitExit(name string, timeout time.Duration) (bool, error) {
	p := c.process(name)
	if p == nil {
		return false, fmt.Errorf("no component %s", name)
	}
	select {
	case <-p.done:
	default:
		if timeout <= 0 {
			return false, nil
		}
		select {
		case <-p.done:
		case <-time.After(timeout):
			return false, nil
		}
	}
	c.forget(p)
	return true, nil
}

// RestartProcess stops a component with SIGTERM (SIGKILL after 10s: a
// kube-apiserver drains its requests for a minute) and starts it again
// with the same binary, flags and environment; it does not wait for it
// to serve.
func (c *Cluster) RestartProcess(name string) error {
	old := c.process(name)
	if old == nil {
		return fmt.Errorf("no component %s", name)
	}
	if err := c.stopWithin(name, syscall.SIGTERM, 10*time.Second); err != nil {
		return err
	}
	return c.StartProcessEnv(name, old.path, old.env, old.args...)
}

// RestartAPIServer restarts kube-apiserver and waits until it is ready.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	if err := c.RestartProcess("kube-apiserver"); err != nil {
		return err
	}
	return c.waitAPIServer(ctx)
}

// RestartEtcd restarts the cluster's etcd and waits until it is healthy.
func (c *Cluster) RestartEtcd(ctx context.Context) error {
	if err := c.RestartProcess("etcd"); err != nil {
		return err
	}
	return c.waitHTTP(ctx, "etcd", c.EtcdURL+"/health")
}

// RestartControllerManager restarts kube-controller-manager with its
// controllers under per-controller service-account credentials (as the
// cluster starts) or all under its own identity
// (system:kube-controller-manager), the two ways a cluster may run it.
func (c *Cluster) RestartControllerManager(serviceAccountCredentials bool) error {
	if err := c.StopProcess("kube-controller-manager", syscall.SIGTERM); err != nil {
		return err
	}
	args := make([]string, 0, len(c.kcmArgs))
	for _, a := range c.kcmArgs {
		if strings.HasPrefix(a, "--use-service-account-credentials=") {
			a = fmt.Sprintf("--use-service-account-credentials=%v", serviceAccountCredentials)
		}
		args = append(args, a)
	}
	return c.run("kube-controller-manager", args...)
}

// Exited reports the first component that has exited, if any: a cluster
// whose component died is broken, and callers should say which one.
func (c *Cluster) Exited() error {
	c.procsMu.Lock()
	defer c.procsMu.Unlock()
	for _, p := range c.procs {
		if c.supervised[p.name] || p.stopping {
			continue
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v (log: %s)", p.name, p.err, c.LogFile(p.name))
		default:
		}
	}
	return nil
}

// LogFile is the path of a component's log.
func (c *Cluster) LogFile(name string) string {
	return filepath.Join(c.Dir, "logs", name+".log")
}

// componentEnv is what a component runs with besides this process's
// environment. kube-controller-manager's collector: with GOGC=400 it spent
// 64 CPU-seconds over a Deployment's and a StatefulSet's 1,000-pod
// scale-up, rollout and scale-down where it spent 84 (`hack/bench
// -scenarios=deployment,statefulset`, one run each, 11-30), a few hundred
// MB more of heap per cluster. etcd and kube-scheduler spent the same
// either way (32.1 and 32.0, 24.4 and 25.6 CPU-seconds), so they keep
// Go's default. The API server's is set where it starts.
var componentEnv = map[string][]string{"kube-controller-manager": {"GOGC=400"}}

func (c *Cluster) run(name string, args ...string) error {
	return c.StartProcessEnv(name, c.Binaries[name], componentEnv[name], args...)
}

// StartProcess runs a program alongside the cluster, logging to
// LogFile(name); Stop ends it with the cluster's own components, before them.
func (c *Cluster) StartProcess(name, path string, args ...string) error {
	return c.StartProcessEnv(name, path, nil, args...)
}

// StartProcessEnv is StartProcess with env added to this process's
// environment.
func (c *Cluster) StartProcessEnv(name, path string, env []string, args ...string) error {
	log, err := os.OpenFile(c.LogFile(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = log, log
	// Each component leads its own process group so Stop can end it with
	// its children; Pdeathsig ends it if this process dies without Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), path: path, args: args, env: env}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	c.procsMu.Lock()
	c.procs = append(c.procs, p)
	c.procsMu.Unlock()
	return nil
}

func (c *Cluster) waitHTTP(ctx context.Context, what, url string) error {
	return c.poll(ctx, what, time.Minute, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// poll waits for cond, failing early, with the component's name, if a
// component exits meanwhile.
func (c *Cluster) poll(ctx context.Context, what string, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Exited(); err != nil {
			return false, err
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}
