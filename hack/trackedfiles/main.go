// Command trackedfiles fails when git tracks build output (an executable
// binary, or any file over 1 MiB outside a testdata folder) or a
// hand-written Go file over 500 lines. `make test` runs
// it, so a binary committed by mistake turns CI red instead of weighing on
// every clone from then on.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

func main() {
	problems, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "trackedfiles:", err)
		os.Exit(1)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "trackedfiles:", p)
	}
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "trackedfiles: build output belongs in .gitignore, not in git (git rm --cached it); a long Go file is split one file per concern")
		os.Exit(1)
	}
}

// run checks every file in git's index as it stands in the working tree.
func run() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "--stage", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var problems []string
	for _, entry := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := strings.Cut(entry, "\t")
		if !ok {
			continue
		}
		f, err := readFile(path, strings.HasPrefix(meta, "100755"))
		if os.IsNotExist(err) {
			continue // deleted in the working tree, not yet in the index
		}
		if err != nil {
			return nil, err
		}
		if p := check(f); p != "" {
			problems = append(problems, p)
		}
	}
	return problems, nil
}

func readFile(path string, executable bool) (file, error) {
	fh, err := os.Open(path)
	if err != nil {
		return file{}, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return file{}, err
	}
	head := make([]byte, 8000)
	n, err := io.ReadFull(fh, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return file{}, err
	}
	f := file{path: path, size: st.Size(), executable: executable, head: head[:n]}
	if strings.HasSuffix(path, ".go") {
		if _, err := fh.Seek(0, io.SeekStart); err != nil {
			return file{}, err
		}
		all, err := io.ReadAll(fh)
		if err != nil {
			return file{}, err
		}
		f.lines = bytes.Count(all, []byte("\n"))
	}
	return f, nil
}
