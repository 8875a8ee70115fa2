package zkserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// install is a located Java + ZooKeeper installation.
type install struct {
	java      string
	jar       string
	classpath string
}

// debianExtras are jars that Debian's zookeeper.jar does not name in its
// manifest Class-Path but that the server wants at run time, looked up in
// the jar's directory and added when present:
//   - slf4j-simple: an slf4j binding, so the server logs (to stderr, which
//     is LogFile) instead of warning once and discarding everything;
//   - the netty jars that netty-handler/netty-transport need but whose
//     Debian manifests do not list (only used if Netty is configured).
//
// Everything else (jute, slf4j-api, commons-cli/io, jackson, jetty, metrics,
// snappy, netty-*) comes through zookeeper.jar's manifest Class-Path.
var debianExtras = []string{
	"slf4j-simple.jar",
	"netty-codec.jar",
	"netty-resolver.jar",
	"netty-transport-native-unix-common.jar",
}

// Classpath reports the java binary and the classpath the package would use,
// or an error wrapping ErrNotInstalled.
func Classpath() (java, classpath string, err error) {
	in, err := findInstall()
	if err != nil {
		return "", "", err
	}
	return in.java, in.classpath, nil
}

// findInstall locates java and the ZooKeeper jar, honouring JAVA, ZK_JAR and
// ZK_CLASSPATH. It never starts anything, so it cannot hang.
func findInstall() (install, error) {
	var in install

	java := os.Getenv("JAVA")
	if java == "" {
		if p, err := exec.LookPath("java"); err == nil {
			java = p
		} else {
			java = "/usr/bin/java"
		}
	}
	if !strings.ContainsRune(java, os.PathSeparator) {
		p, err := exec.LookPath(java)
		if err != nil {
			return in, fmt.Errorf("%w: java %q not found: %v", ErrNotInstalled, java, err)
		}
		java = p
	}
	if fi, err := os.Stat(java); err != nil {
		return in, fmt.Errorf("%w: java %s: %v", ErrNotInstalled, java, err)
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return in, fmt.Errorf("%w: java %s is not an executable file", ErrNotInstalled, java)
	}
	in.java = java

	jar := os.Getenv("ZK_JAR")
	userJar := jar != ""
	if !userJar {
		jar = DefaultJar
	}
	if fi, err := os.Stat(jar); err != nil {
		return in, fmt.Errorf("%w: ZooKeeper jar %s: %v", ErrNotInstalled, jar, err)
	} else if fi.IsDir() {
		return in, fmt.Errorf("%w: ZooKeeper jar %s is a directory", ErrNotInstalled, jar)
	}
	in.jar = jar

	cp := []string{jar}
	if extra := os.Getenv("ZK_CLASSPATH"); userJar && extra != "" {
		cp = append(cp, extra)
	} else {
		dir := filepath.Dir(jar)
		for _, name := range debianExtras {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err == nil {
				cp = append(cp, p)
			}
		}
	}
	in.classpath = strings.Join(cp, string(os.PathListSeparator))
	return in, nil
}
