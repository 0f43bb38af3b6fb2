package main

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	script := []byte("#!/usr/bin/env bash\nset -e\nmake test\n")
	cases := []struct {
		name string
		f    file
		want string // a part of the problem, "" for none
	}{
		{"source", file{path: "internal/x.go", size: 900, head: []byte("package x\n")}, ""},
		{"executable script", file{path: ".ci/run", size: 80, executable: true, head: script}, ""},
		{"linux binary at the top", file{path: "devctl", size: 41 << 20, executable: true, head: []byte("\x7fELF\x02\x01\x01\x00")}, "executable binary"},
		{"binary without the executable bit", file{path: "bin/manager", size: 4096, head: []byte("\x7fELF\x02")}, "executable binary"},
		{"macOS binary", file{path: "bench", size: 4096, executable: true, head: []byte{0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1}}, "executable binary"},
		{"windows binary", file{path: "lifeline.exe", size: 4096, head: []byte("MZ\x90\x00")}, "executable binary"},
		{"executable of an unknown format", file{path: "tool", size: 100, executable: true, head: []byte("\x01\x02\x00\x03")}, "executable and binary"},
		{"binary in testdata still refused", file{path: "internal/a/testdata/tool", size: 10, executable: true, head: []byte("\x7fELF")}, "executable binary"},
		{"large file", file{path: "docs/dump.json", size: 1<<20 + 1, head: []byte("{")}, "over the"},
		{"exactly the limit", file{path: "docs/dump.json", size: 1 << 20, head: []byte("{")}, ""},
		{"large fixture in testdata", file{path: "internal/cloneset/revision/testdata/big.json", size: 5 << 20, head: []byte("{")}, ""},
		{"large fixture in a top testdata", file{path: "testdata/big.yaml", size: 5 << 20, head: []byte("a: b")}, ""},
		{"a folder merely named like testdata", file{path: "mytestdata/big.yaml", size: 5 << 20, head: []byte("a: b")}, "over the"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := check(c.f)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("check = %q, want one containing %q", got, c.want)
			}
		})
	}
}
