/*
 * keywords.h — the reserved words of LANGUAGE.md §10 as a list.
 */
#ifndef NH_KEYWORDS_H
#define NH_KEYWORDS_H

/* NULL-terminated. */
extern const char *const parse_keywords[];

#endif
