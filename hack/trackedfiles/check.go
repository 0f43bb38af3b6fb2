package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// maxSize is the largest file git may track outside a testdata folder.
const maxSize = 1 << 20

// maxGoLines is the longest a hand-written Go file may be: past it, a file
// holds more than one concern and a reader cannot find one in it quickly.
const maxGoLines = 500

// file is what the check needs of one tracked file: its path, size, git's
// executable bit, its first bytes and, for Go files, its line count.
type file struct {
	path       string
	size       int64
	executable bool
	head       []byte
	lines      int
}

// generated matches the line Go's convention puts in generated files.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// binaryMagic are the openings of the executable formats a Go build writes
// (ELF, Mach-O in both byte orders and widths, universal Mach-O, PE, wasm).
var binaryMagic = [][]byte{
	[]byte("\x7fELF"),
	{0xfe, 0xed, 0xfa, 0xce}, {0xce, 0xfa, 0xed, 0xfe},
	{0xfe, 0xed, 0xfa, 0xcf}, {0xcf, 0xfa, 0xed, 0xfe},
	{0xca, 0xfe, 0xba, 0xbe},
	[]byte("MZ"),
	[]byte("\x00asm"),
}

// check says what is wrong with tracking f, or "" when nothing is.
// Test fixtures under a testdata folder may be large, never executables.
func check(f file) string {
	for _, magic := range binaryMagic {
		if bytes.HasPrefix(f.head, magic) {
			return fmt.Sprintf("%s is an executable binary (%d bytes)", f.path, f.size)
		}
	}
	// An executable with a NUL in its first bytes is no script.
	if f.executable && bytes.IndexByte(f.head, 0) >= 0 {
		return fmt.Sprintf("%s is executable and binary (%d bytes)", f.path, f.size)
	}
	if f.size > maxSize && !inTestdata(f.path) {
		return fmt.Sprintf("%s is %d bytes, over the %d allowed outside testdata/", f.path, f.size, maxSize)
	}
	if strings.HasSuffix(f.path, ".go") && f.lines > maxGoLines && !generated.Match(f.head) {
		return fmt.Sprintf("%s has %d lines, over the %d a hand-written Go file may have: split it by concern", f.path, f.lines, maxGoLines)
	}
	return ""
}

func inTestdata(path string) bool {
	return strings.HasPrefix(path, "testdata/") || strings.Contains(path, "/testdata/")
}
