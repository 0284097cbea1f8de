//go:build !unix

package atomicfile

import "io/fs"

// FollowLink follows every link in a path the user named: there is no
// sticky-directory rule here.
func FollowLink(link, dest string, li fs.FileInfo) error { return nil }
