/* SPDX-License-Identifier: MIT */
/* copygen shim: the string.h prototypes string.c defines. */
#ifndef COPYGEN_SHIM_STRING_H
#define COPYGEN_SHIM_STRING_H

#include <linux/types.h>

void *memcpy(void *dest, const void *src, size_t count);
void *memmove(void *dest, const void *src, size_t count);
void *memset(void *s, int c, size_t count);
void *__memcpy(void *dest, const void *src, size_t count);
void *__memmove(void *dest, const void *src, size_t count);
void *__memset(void *s, int c, size_t count);

#endif
