//go:build tools

// The program this module builds; the build tag keeps it out of any real build.
package tools

import _ "go.etcd.io/etcd/server/v3"
