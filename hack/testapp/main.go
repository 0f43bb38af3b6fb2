// Command testapp is the program the real-node tests run in their
// containers, and the local cluster's pause image. hack/cluster builds it
// into images of several versions (lifeline.test/testapp:v1, v2, …) that
// differ only in their config (APP_VERSION, NEVER_READY), so each version
// has an image ID of its own and starts in milliseconds.
//
//	testapp            serve: mark itself ready (unless NEVER_READY), log its life
//	testapp probe      exit 0 when the container says it is ready (an exec readiness probe)
//	testapp prestop    a preStop hook: log it, then take PRESTOP_SECONDS (1 by default)
//	testapp pause      the pod sandbox: wait for SIGTERM
//
// What happens inside the container is appended, a line each, to
// $EVENTS_DIR/$POD_NAME.$CONTAINER_NAME when EVENTS_DIR is set (a hostPath
// the tests read): "start v1", "prestop v1", "sigterm v1", "exit v1". With
// REPORT_ENV naming a variable, each start also appends NAME=value to the
// same file's .env twin (what the kubelet gave this container).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

const readyFile = "/tmp/ready"

func main() {
	cmd := "serve"
	if len(os.Args) > 1 {
		cmd = os.Args[1]
	}
	switch cmd {
	case "serve":
		serve()
	case "probe":
		if _, err := os.Stat(readyFile); err != nil {
			fmt.Fprintln(os.Stderr, "not ready:", err)
			os.Exit(1)
		}
	case "prestop":
		logEvent("prestop")
		time.Sleep(seconds("PRESTOP_SECONDS", 1))
	case "pause":
		wait()
	default:
		fmt.Fprintln(os.Stderr, "usage: testapp [serve|probe|prestop|pause]")
		os.Exit(2)
	}
}

func serve() {
	logEvent("start")
	if name := os.Getenv("REPORT_ENV"); name != "" {
		appendLine(".env", name+"="+os.Getenv(name))
	}
	fmt.Println("testapp", version(), "started")
	if os.Getenv("NEVER_READY") == "" {
		if err := os.WriteFile(readyFile, []byte(version()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "marking ready:", err)
		}
	}
	wait()
	logEvent("sigterm")
	time.Sleep(seconds("EXIT_SECONDS", 0))
	logEvent("exit")
}

func wait() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
}

func version() string { return os.Getenv("APP_VERSION") }

func seconds(env string, def float64) time.Duration {
	v, err := strconv.ParseFloat(os.Getenv(env), 64)
	if err != nil {
		v = def
	}
	return time.Duration(v * float64(time.Second))
}

// logEvent appends one line to this container's events file, with the
// time, so a test can order what it reads against what it watched.
func logEvent(what string) {
	appendLine("", fmt.Sprintf("%s %s %s", time.Now().UTC().Format(time.RFC3339Nano), what, version()))
}

// appendLine appends a line to this container's events file (suffix "")
// or its twin.
func appendLine(suffix, line string) {
	dir := os.Getenv("EVENTS_DIR")
	if dir == "" {
		return
	}
	name := os.Getenv("POD_NAME") + "." + os.Getenv("CONTAINER_NAME") + suffix
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		fmt.Fprintln(os.Stderr, "logging", line+":", err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}
