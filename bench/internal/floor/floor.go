// Package floor holds the least work an auditor of a cluster must do,
// against which the benchmarks measure doctor.
package floor

import (
	"context"
	"fmt"
	"io"
	"sync"

	"k8s.io/client-go/rest"
)

// RawLists LISTs all pods and all nodes from the API server's watch cache
// (resourceVersion=0) in protobuf, both at once, and reads each response
// to its end without decoding it; it returns the bytes read.
func RawLists(ctx context.Context, rc rest.Interface) (int64, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int64
		errs  []error
	)
	for _, path := range []string{"/api/v1/pods", "/api/v1/nodes"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := func() (int64, error) {
				body, err := rc.Get().AbsPath(path).Param("resourceVersion", "0").
					SetHeader("Accept", "application/vnd.kubernetes.protobuf").Stream(ctx)
				if err != nil {
					return 0, err
				}
				defer body.Close()
				return io.Copy(io.Discard, body)
			}()
			mu.Lock()
			defer mu.Unlock()
			total += n
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", path, err))
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return total, errs[0]
	}
	return total, nil
}
