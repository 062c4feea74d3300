-- gpuselect.huge_pages: chunks of keys and values of 4 MB and more get
-- madvise(MADV_HUGEPAGE) (src/state/state.c, gs_chunk_advise_huge).  Advice only:
-- the answers are the built-in's with it on and off, over states large
-- enough to reach such chunks (1.2M float8 keys; 600k texts in the value
-- store and the text path's key array).
LOAD 'gpuselect';
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
CREATE TABLE hp AS
	SELECT (i::int8 * 7919 % 1200007)::float8 / 3 AS x,
		   lpad(to_hex(i::int8 * 2654435761 % 4294967296), 16, 'g') AS t
	FROM generate_series(1, 1200000) i;
-- (the setting is read when the chunks are allocated, at execution)
PREPARE hp_float8 AS
SELECT gpu_quantiles(x, ARRAY[0, 0.25, 0.5, 0.99, 1]) =
	   (SELECT percentile_disc(ARRAY[0, 0.25, 0.5, 0.99, 1]) WITHIN GROUP (ORDER BY x) FROM hp) AS same
FROM hp;
PREPARE hp_text AS
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY t COLLATE "C") =
	   (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY t COLLATE "C") FROM hp WHERE x < 200000) AS same
FROM hp WHERE x < 200000;
SHOW gpuselect.huge_pages;
EXECUTE hp_float8;
EXECUTE hp_text;
SET gpuselect.huge_pages = off;
EXECUTE hp_float8;
EXECUTE hp_text;
RESET gpuselect.huge_pages;
-- any role may set it
CREATE ROLE gs_hp_user;
SET ROLE gs_hp_user;
SET gpuselect.huge_pages = off;
SHOW gpuselect.huge_pages;
RESET ROLE;
DROP ROLE gs_hp_user;
DEALLOCATE ALL;
DROP TABLE hp;
