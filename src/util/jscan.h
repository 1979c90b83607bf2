/*
 * jscan.h: spans of JSON text (PURE; the worker runs it on POST bodies).
 *
 * A scanner, not a parser: it says where a string, a value or an object's
 * member starts and ends in the caller's own bytes, so that what cfpm
 * stores is exactly what the client sent and not a re-encoding (numbers
 * keep their digits). It is meant for text a validating parser (jcheck.h,
 * which accepts what jansson accepts) has already accepted; on such text
 * every span is exact. On any other
 * bytes every function still terminates, reads nothing outside s[0..n-1]
 * (no NUL terminator is needed) and either fails or returns a position
 * inside the input; what that position means is then unspecified.
 *
 * Positions are indexes into s. Functions returning a position return the
 * index just past what they scanned, which is never 0, so 0 means failure.
 * No jansson, no allocation, no I/O.
 */
#ifndef CFPM_JSCAN_H
#define CFPM_JSCAN_H

#include <stddef.h>
#include <stdint.h>

#define JSCAN_UTF8_MAX	4	/* bytes of one code point in UTF-8 */

/*
 * PURE. The first index at or after i that is not JSON white space
 * (space, tab, newline, carriage return); n if the text ends first.
 */
size_t jscan_ws(const char *s, size_t n, size_t i);

/*
 * PURE. s[i] is the opening '"' of a string: returns the index just past
 * its closing quote (backslash escapes are stepped over, not checked).
 * 0 if i >= n, s[i] is not '"', or the string is not closed within n
 * bytes (a trailing lone backslash included).
 */
size_t jscan_skip_string(const char *s, size_t n, size_t i);

/*
 * PURE. s[i..n-1] holds optional white space and then one JSON value:
 * returns the index just past that value (white space after it is not
 * included). Strings and nesting are followed; a number or a literal
 * runs to the next white space or structural character and is not
 * checked, nor is whether a '}' closes a '{' or a '['. Returns 0 if the
 * text ends inside the value, starts with no value (',', ':', '}', ']'),
 * or meets a NUL byte outside a string where a token should start.
 */
size_t jscan_skip_value(const char *s, size_t n, size_t i);

/*
 * PURE. s[i] is the backslash of an escape inside a string: decodes it
 * into the code point *cp and returns the index just past it: i + 2 for
 * \" \\ \/ \b \f \n \r \t, i + 6 for \uXXXX (hex digits of either case),
 * i + 12 for a surrogate pair \uD8xx\uDCxx (*cp >= 0x10000). \u0000 is
 * decoded (*cp = 0); the caller decides whether it may appear. Returns 0,
 * *cp untouched, if s[i] is not a backslash, the escape is cut off by n,
 * has another letter or a non-hex digit, or is a surrogate without its
 * other half (which jansson refuses too).
 */
size_t jscan_unescape(const char *s, size_t n, size_t i, uint32_t *cp);

/*
 * PURE. s[i] is the opening '"' of a string: writes what it decodes to
 * (escapes resolved as jscan_unescape() does, code points as UTF-8,
 * other bytes as they are, \u0000 as a NUL byte) to out, at most cap
 * bytes, no terminator. Returns the decoded length, or -1 if it needs
 * more than cap bytes, an escape is malformed, the string is not closed
 * within n bytes or s[i] is not '"'. Raw bytes are not checked: that is
 * the validating parser's job.
 */
long jscan_string_decode(const char *s, size_t n, size_t i, char *out,
    size_t cap);

/*
 * PURE. 1 if the raw text of a member name, the len bytes between its
 * quotes, decodes (escapes resolved as jscan_unescape() does, code points
 * written as UTF-8, other bytes taken as they are) to exactly the bytes
 * of the C string name; 0 otherwise, and for a malformed escape or one
 * that decodes to NUL (no C string holds it).
 */
int jscan_key_is(const char *k, size_t len, const char *name);

/*
 * PURE. s (n bytes) is a JSON object, with optional white space around
 * it: finds the first member at its top level whose name decodes to name
 * (jscan_key_is; members of nested objects and text inside strings never
 * match) and returns 0 with s[*start..*end-1] the member's value, white
 * space excluded. Returns -1, *start and *end untouched, if there is no
 * such member or the scan meets something that is not an object's
 * members before finding it. Duplicate names: the first one is found;
 * jansson keeps the last unless it rejects duplicates
 * (JSON_REJECT_DUPLICATES), which is how cfpm loads bodies.
 */
int jscan_member_span(const char *s, size_t n, const char *name,
    size_t *start, size_t *end);

#endif
