package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// debianDirs is where Debian installs each PostgreSQL version's binaries.
const debianDirs = "/usr/lib/postgresql/*/bin"

// findBin returns the directory of initdb and postgres: that of the initdb
// in PATH (through symbolic links), else the newest Debian one.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if isExec(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob(filepath.Join(debianDirs, "initdb"))
	var dirs []string
	for _, m := range matches {
		if dir := filepath.Dir(m); isExec(m) && isExec(filepath.Join(dir, "postgres")) {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		return "", errors.New("no PostgreSQL: neither PATH nor " + debianDirs +
			" has initdb and postgres (scripts/tools.sh installs Debian's postgresql)")
	}
	// The version is the directory above bin: "15", "9.6".
	version := func(dir string) []int {
		var v []int
		for f := range strings.SplitSeq(filepath.Base(filepath.Dir(dir)), ".") {
			n, _ := strconv.Atoi(f)
			v = append(v, n)
		}
		return v
	}
	return slices.MaxFunc(dirs, func(a, b string) int { return slices.Compare(version(a), version(b)) }), nil
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// serverUser returns the credential of the postgres system user when the
// test runs as root (PostgreSQL refuses to run as root), else nil: the
// current user.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs another user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user postgres: uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user postgres: gid %q: %w", u.Gid, err)
	}
	// An empty Groups drops root's supplementary groups.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}
