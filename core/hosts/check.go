package hosts

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kandev/kandev/core/api"
)

// DirExpr is a shell expression for kandev's directory on the host: dir as
// given ("" is ~/.kandev; a leading ~/ is the remote home).
func DirExpr(dir string) string {
	switch {
	case dir == "":
		return `"$HOME/.kandev"`
	case dir == "~":
		return `"$HOME"`
	case strings.HasPrefix(dir, "~/"):
		return `"$HOME"/` + Quote(dir[2:])
	}
	return Quote(dir)
}

// BinaryPath is where kandev keeps its own binary on the host, as a shell
// expression.
func BinaryPath(dir string) string { return DirExpr(dir) + `/bin/kandev` }

// FileSHA256 is the hex SHA-256 of a file: what decides whether the host's
// kandev binary is this one.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Check logs in to the host and reports what it has: kandev's binary (its
// version and hash against localHash), git, each of commands (profile →
// command) on the host's PATH, bubblewrap, docker and podman. Slots are the
// caller's to fill in. An unreachable host is a result, not an error.
func Check(ctx context.Context, p *Pool, t Target, dir string, commands []api.HostCommand, localHash string) api.HostCheck {
	res := api.HostCheck{Host: t.Name, Agents: []api.HostCommand{}}
	var b strings.Builder
	fmt.Fprintf(&b, "k=%s\n", BinaryPath(dir))
	b.WriteString(`printf 'kandev.path\t%s\n' "$k"
if [ -x "$k" ]; then
  printf 'kandev.version\t%s\n' "$("$k" version 2>/dev/null | head -n 1)"
  printf 'kandev.sha256\t%s\n' "$(sha256sum "$k" 2>/dev/null | cut -d' ' -f1)"
fi
if command -v git >/dev/null 2>&1; then printf 'git\t%s\n' "$(git --version)"; fi
printf 'bwrap\t%s\n' "$(command -v bwrap 2>/dev/null)"
d="$(command -v docker 2>/dev/null)"
printf 'docker\t%s\n' "$d"
if [ -n "$d" ]; then
  to=; if command -v timeout >/dev/null 2>&1; then to="timeout 10"; fi
  if out="$($to docker info --format '{{.ServerVersion}}' 2>&1 </dev/null)"; then
    printf 'docker.server\t%s\n' "$(printf '%s' "$out" | head -n 1)"
  else
    printf 'docker.down\t%s\n' "$(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)"
  fi
fi
printf 'podman\t%s\n' "$(command -v podman 2>/dev/null)"
`)
	for i, c := range commands {
		fmt.Fprintf(&b, "printf 'agent.%d\\t%%s\\n' \"$(command -v %s 2>/dev/null)\"\n", i, Quote(c.Command))
	}
	out, err := p.Script(ctx, t, b.String())
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Reachable = true
	found := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok {
			found[k] = strings.TrimSpace(v)
		}
	}
	res.Kandev.Path = found["kandev.path"]
	res.Kandev.Version = found["kandev.version"]
	res.Kandev.SHA256 = found["kandev.sha256"]
	res.Kandev.Present = res.Kandev.Version != ""
	res.Kandev.Current = res.Kandev.Present && localHash != "" && res.Kandev.SHA256 == localHash
	res.Git = found["git"]
	res.Bwrap = found["bwrap"]
	res.Docker = found["docker"]
	res.DockerServer = found["docker.server"]
	if res.Docker != "" && res.DockerServer == "" {
		// Its daemon did not answer docker info (down, no permission on
		// its socket, or no answer in 10 s): containers cannot run there.
		res.DockerDown = found["docker.down"]
		if res.DockerDown == "" {
			res.DockerDown = "docker info said nothing"
		}
	}
	res.Podman = found["podman"]
	for i, c := range commands {
		c.Path = found[fmt.Sprintf("agent.%d", i)]
		res.Agents = append(res.Agents, c)
	}
	return res
}

// EnsureBinary copies the local kandev binary (localPath, hash localHash)
// to the host unless the one there has the same hash. It reports whether
// it copied.
func EnsureBinary(ctx context.Context, p *Pool, t Target, dir, localPath, localHash string) (bool, error) {
	out, err := p.Script(ctx, t, fmt.Sprintf("k=%s\nif [ -f \"$k\" ]; then sha256sum \"$k\" | cut -d' ' -f1; fi\n", BinaryPath(dir)))
	if err != nil {
		return false, err
	}
	if strings.TrimSpace(out) == localHash {
		return false, nil
	}
	f, err := os.Open(localPath)
	if err != nil {
		return false, fmt.Errorf("open kandev binary: %w", err)
	}
	defer f.Close()
	if err := p.UploadExpr(ctx, t, f, BinaryPath(dir)); err != nil {
		return false, fmt.Errorf("copy kandev to host %s: %w", t.Name, err)
	}
	return true, nil
}
