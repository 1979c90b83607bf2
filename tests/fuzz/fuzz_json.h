/*
 * fuzz_json.h: what the JSON targets (fuzz_jcheck.c, fuzz_jwt.c,
 * fuzz_body.c) ask of jansson's trees beside jansson's own verdict.
 */
#ifndef CFPM_FUZZ_JSON_H
#define CFPM_FUZZ_JSON_H

#include <jansson.h>

/*
 * Containers nested in v, v itself counted (0 for a scalar): the depth
 * jcheck's max_depth bounds, which jansson does not (past 2048 only).
 */
static inline int
fuzz_json_depth(const json_t *v)
{
	const char *k;
	json_t *m;
	size_t i;
	int d, max = 0;

	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, m)
			if ((d = fuzz_json_depth(m)) > max)
				max = d;
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, m)
			if ((d = fuzz_json_depth(m)) > max)
				max = d;
	} else
		return 0;
	return max + 1;
}

#endif
