/*
 * datum_numkey.c — numeric values as exact int64 keys (the datum store's
 * fixed-width path for numeric, datum_state.h).
 *
 * A numeric(p,s) column holds values that all share one display scale
 * (dscale).  Among values of one dscale, numeric order is the order of
 * value * 10^dscale, and when that product fits int64 the pair (product,
 * dscale) determines the value's bytes: PostgreSQL stores every numeric in
 * the canonical form make_result() builds (short header when it can, no
 * leading or trailing zero base-10000 digits, zero positive with weight 0),
 * and int64_div_fast_to_numeric (utils/numeric.h, 14 and later) rebuilds
 * exactly that form.  So such a group is selected as int64 keys by the CPU
 * key engine and its results rebuilt from key and dscale, bit for bit.
 *
 * This file reads numeric's on-disk format (numeric.c's NumericShort: a
 * uint16 header with sign, dscale and weight, then int16 base-10000 digits),
 * which is frozen by pg_upgrade compatibility.  Anything it does not accept
 * -- the long format, NaN and the infinities (NUMERIC_SPECIAL), a
 * non-canonical value, a product out of int64 range, compressed or external
 * values -- makes gs_numkey_from_datum answer false, and the caller keeps
 * the value itself (the comparison path) instead.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "utils/numeric.h"
#include "utils/typcache.h"

#include "state/datum_state.h"

/* numeric.c's short-format header bits (its on-disk format) */
#define GS_NUMERIC_SIGN_MASK		0xC000
#define GS_NUMERIC_SHORT			0x8000
#define GS_NUMERIC_SHORT_SIGN_MASK	0x2000
#define GS_NUMERIC_SHORT_DSCALE_MASK	0x1F80
#define GS_NUMERIC_SHORT_DSCALE_SHIFT	7
#define GS_NUMERIC_SHORT_WEIGHT_SIGN_MASK	0x0040
#define GS_NUMERIC_SHORT_WEIGHT_MASK	0x003F
#define GS_NBASE					10000
#define GS_DEC_DIGITS				4

static const uint64 gs_pow10[19] = {
	UINT64CONST(1), UINT64CONST(10), UINT64CONST(100), UINT64CONST(1000),
	UINT64CONST(10000), UINT64CONST(100000), UINT64CONST(1000000),
	UINT64CONST(10000000), UINT64CONST(100000000), UINT64CONST(1000000000),
	UINT64CONST(10000000000), UINT64CONST(100000000000),
	UINT64CONST(1000000000000), UINT64CONST(10000000000000),
	UINT64CONST(100000000000000), UINT64CONST(1000000000000000),
	UINT64CONST(10000000000000000), UINT64CONST(100000000000000000),
	UINT64CONST(1000000000000000000)
};

bool
gs_numkey_eligible(Oid typid, Oid sortop, bool *descending)
{
	TypeCacheEntry *tce;

	if (typid != NUMERICOID || !OidIsValid(sortop))
		return false;
	tce = lookup_type_cache(NUMERICOID, TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);
	if (sortop == tce->lt_opr)
		*descending = false;
	else if (sortop == tce->gt_opr)
		*descending = true;
	else
		return false;			/* USING another ordering: compare values */
	return true;
}

bool
gs_numkey_from_datum(Datum d, int64 *key, int *dscale, bool *short_hdr)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);
	const char *p;
	Size		len;
	uint16		hdr;
	int			ndigits,
				weight,
				shift;
	uint64		acc = 0;

	if (VARATT_IS_SHORT(v))
	{
		p = VARDATA_SHORT(v);
		len = VARSIZE_SHORT(v) - VARHDRSZ_SHORT;
		*short_hdr = true;
	}
	else if (!VARATT_IS_EXTENDED(v))
	{
		p = VARDATA(v);
		len = VARSIZE(v) - VARHDRSZ;
		*short_hdr = false;
	}
	else
		return false;			/* compressed or external: the value path detoasts */

	if (len < sizeof(uint16) || (len - sizeof(uint16)) % sizeof(int16) != 0)
		return false;
	memcpy(&hdr, p, sizeof(hdr));	/* p may be unaligned (1-byte varlena header) */
	if ((hdr & GS_NUMERIC_SIGN_MASK) != GS_NUMERIC_SHORT)
		return false;			/* long format, NaN, +-Infinity */
	ndigits = (int) ((len - sizeof(uint16)) / sizeof(int16));
	*dscale = (hdr & GS_NUMERIC_SHORT_DSCALE_MASK) >> GS_NUMERIC_SHORT_DSCALE_SHIFT;
	weight = ((hdr & GS_NUMERIC_SHORT_WEIGHT_SIGN_MASK) ? ~GS_NUMERIC_SHORT_WEIGHT_MASK : 0) |
		(hdr & GS_NUMERIC_SHORT_WEIGHT_MASK);

	if (ndigits == 0)
	{
		/* zero: make_result's form is positive with weight 0 */
		if ((hdr & (GS_NUMERIC_SHORT_SIGN_MASK | GS_NUMERIC_SHORT_WEIGHT_SIGN_MASK |
					GS_NUMERIC_SHORT_WEIGHT_MASK)) != 0)
			return false;
		*key = 0;
		return true;
	}

	/*
	 * value * 10^dscale from the digits, Horner in base 10000.  shift: the
	 * power of ten the last digit stands for in value * 10^dscale (dscale
	 * minus 4 times the number of digits after the point).  shift >= 0: the
	 * digits as an integer times 10^shift.  shift < 0: the last digit holds
	 * decimals below dscale, which must be zeros (1 to 3 of them; more would
	 * hide a whole digit, not make_result's form): it adds last / 10^-shift
	 * after 4 + shift decimal places.  Seven digits or more exceed int64.
	 */
	if (ndigits > 6)
		return false;
	shift = *dscale - GS_DEC_DIGITS * (ndigits - 1 - weight);
	if (shift < -(GS_DEC_DIGITS - 1) || shift > 18)
		return false;
	for (int i = 0; i < ndigits; i++)
	{
		int16		digit;
		uint64		mul = GS_NBASE;

		memcpy(&digit, p + sizeof(uint16) + i * sizeof(int16), sizeof(digit));
		if (digit < 0 || digit >= GS_NBASE)
			return false;
		if ((i == 0 || i == ndigits - 1) && digit == 0)
			return false;		/* not stripped: not make_result's form */
		if (i == ndigits - 1 && shift < 0)
		{
			/* constant divisors: the compiler multiplies instead of dividing */
			switch (-shift)
			{
				case 1:
					if (digit % 10 != 0)
						return false;
					digit /= 10;
					mul = 1000;
					break;
				case 2:
					if (digit % 100 != 0)
						return false;
					digit /= 100;
					mul = 100;
					break;
				default:
					if (digit % 1000 != 0)
						return false;
					digit /= 1000;
					mul = 10;
					break;
			}
		}
		if (pg_mul_u64_overflow(acc, mul, &acc) ||
			pg_add_u64_overflow(acc, (uint64) digit, &acc))
			return false;
	}
	if (shift > 0 && pg_mul_u64_overflow(acc, gs_pow10[shift], &acc))
		return false;
	if (acc > (uint64) PG_INT64_MAX)
		return false;
	*key = (hdr & GS_NUMERIC_SHORT_SIGN_MASK) ? -(int64) acc : (int64) acc;
	return true;
}

Datum
gs_numkey_to_datum(int64 key, int dscale, bool short_hdr)
{
	Numeric		num = int64_div_fast_to_numeric(key, dscale);
	Size		datalen;
	char	   *s;

	if (!short_hdr || !VARATT_CAN_MAKE_SHORT(num))
		return NumericGetDatum(num);
	/* the values came from tuples with 1-byte headers: so does the built-in's result */
	datalen = VARSIZE(num) - VARHDRSZ;
	s = palloc(datalen + VARHDRSZ_SHORT);
	SET_VARSIZE_SHORT(s, datalen + VARHDRSZ_SHORT);
	memcpy(s + VARHDRSZ_SHORT, VARDATA(num), datalen);
	pfree(num);
	return PointerGetDatum(s);
}
