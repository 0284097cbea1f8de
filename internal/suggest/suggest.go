// Package suggest proposes the known word closest to a misspelled one, for
// "did you mean" hints.
package suggest

import "strings"

// Closest returns the candidate nearest to word by edit distance (case
// ignored), when it is close enough to be a likely typo: at most 2 edits,
// and at most half of word's length. Ties go to the earlier candidate.
func Closest(word string, candidates []string) (string, bool) {
	w := strings.ToLower(word)
	best, bestD := "", -1
	for _, c := range candidates {
		d := Distance(w, strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > 2 || 2*bestD > len([]rune(w)) {
		return "", false
	}
	return best, true
}

// Distance is the optimal-string-alignment distance between a and b, in
// runes: Levenshtein's insertions, deletions and substitutions, plus the
// swap of two neighbouring runes as one edit ("lba" is one edit from "lab").
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows: the one before the previous is needed for swaps.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
