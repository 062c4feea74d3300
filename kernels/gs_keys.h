/*
 * gs_keys.h — order-preserving unsigned keys for every supported value type.
 *
 * Selection never compares values, only keys: key(a) < key(b) exactly when a
 * sorts before b under PostgreSQL's default btree order, with two deliberate
 * refinements that PostgreSQL leaves open because its sort is not stable:
 *   - NaN sorts above +Infinity and all NaNs are one key class (PostgreSQL:
 *     all NaNs equal, greater than everything).  The key keeps the payload
 *     and drops only the sign bit of a NaN, so the mapped-back NaN prints the
 *     same ("NaN").
 *   - -0 and +0 compare equal in PostgreSQL; here -0's key is +0's key minus
 *     one, so the value returned is the very datum stored (an input holding
 *     only -0 returns -0, as percentile_disc does), and no other value lies
 *     between them, so ranks of everything else are unaffected.
 * The mapping is a bijection on everything but NaN sign bits.
 *
 * Widths: int2 -> 16-bit keys; int4, date, float4 -> 32-bit; int8, float8,
 * timestamp, timestamptz -> 64-bit.  Integers flip the sign bit; floats flip
 * the sign bit of non-negatives and all bits of negatives.
 *
 * Plain C, header-only, no PostgreSQL and no CUDA types; usable in .cu files.
 */
#ifndef GS_KEYS_H
#define GS_KEYS_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define GS_KEY_FN static inline __host__ __device__
#else
#define GS_KEY_FN static inline
#endif

GS_KEY_FN uint16_t
gs_key_from_int16(int16_t v)
{
	return (uint16_t) ((uint16_t) v ^ UINT16_C(0x8000));
}

GS_KEY_FN int16_t
gs_int16_from_key(uint16_t k)
{
	return (int16_t) (uint16_t) (k ^ UINT16_C(0x8000));
}

GS_KEY_FN uint32_t
gs_key_from_int32(int32_t v)
{
	return (uint32_t) v ^ UINT32_C(0x80000000);
}

GS_KEY_FN int32_t
gs_int32_from_key(uint32_t k)
{
	return (int32_t) (k ^ UINT32_C(0x80000000));
}

GS_KEY_FN uint64_t
gs_key_from_int64(int64_t v)
{
	return (uint64_t) v ^ UINT64_C(0x8000000000000000);
}

GS_KEY_FN int64_t
gs_int64_from_key(uint64_t k)
{
	return (int64_t) (k ^ UINT64_C(0x8000000000000000));
}

/* float bits -> key: NaN (any sign) -> above +Inf; negatives reversed. */
GS_KEY_FN uint32_t
gs_key_from_float4_bits(uint32_t b)
{
	const uint32_t sign = UINT32_C(0x80000000);

	if ((b & ~sign) > UINT32_C(0x7F800000))	/* NaN: drop the sign */
		return (b & ~sign) | sign;
	return (b & sign) ? ~b : (b | sign);
}

GS_KEY_FN uint32_t
gs_float4_bits_from_key(uint32_t k)
{
	const uint32_t sign = UINT32_C(0x80000000);

	return (k & sign) ? (k & ~sign) : ~k;
}

GS_KEY_FN uint64_t
gs_key_from_float8_bits(uint64_t b)
{
	const uint64_t sign = UINT64_C(0x8000000000000000);

	if ((b & ~sign) > UINT64_C(0x7FF0000000000000))	/* NaN: drop the sign */
		return (b & ~sign) | sign;
	return (b & sign) ? ~b : (b | sign);
}

GS_KEY_FN uint64_t
gs_float8_bits_from_key(uint64_t k)
{
	const uint64_t sign = UINT64_C(0x8000000000000000);

	return (k & sign) ? (k & ~sign) : ~k;
}

GS_KEY_FN uint32_t
gs_key_from_float4(float v)
{
	uint32_t	b;

	memcpy(&b, &v, sizeof b);
	return gs_key_from_float4_bits(b);
}

GS_KEY_FN float
gs_float4_from_key(uint32_t k)
{
	uint32_t	b = gs_float4_bits_from_key(k);
	float		v;

	memcpy(&v, &b, sizeof v);
	return v;
}

GS_KEY_FN uint64_t
gs_key_from_float8(double v)
{
	uint64_t	b;

	memcpy(&b, &v, sizeof b);
	return gs_key_from_float8_bits(b);
}

GS_KEY_FN double
gs_float8_from_key(uint64_t k)
{
	uint64_t	b = gs_float8_bits_from_key(k);
	double		v;

	memcpy(&v, &b, sizeof v);
	return v;
}

#endif							/* GS_KEYS_H */
