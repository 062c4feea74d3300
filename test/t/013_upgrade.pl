# Upgrades: a database with the previous release (0.1) installed, and views
# and a materialized view on every aggregate a user calls, is brought to the
# current release with ALTER EXTENSION gpuselect UPDATE.  Afterwards its
# catalog equals a fresh install's (every function, aggregate and
# dependency of the extension, compared as text), the views still answer
# like the built-ins, and the new release's features work there.
#
# For each later release: keep the released gpuselect--<old>.sql as it was,
# add gpuselect--<old>--<new>.sql, and set $from below to the oldest release
# an upgrade must start from (PostgreSQL chains the update scripts).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

my $from = '0.1';
my ($to) = psql_value("SELECT default_version FROM pg_available_extensions WHERE name = 'gpuselect'");
isnt($to, $from, "the current release ($to) is not the one upgraded from");

for my $db (qw(gs_up_old gs_up_new))
{
	psql_value("DROP DATABASE IF EXISTS $db;");
	psql_value("CREATE DATABASE $db;");
}
END { psql("DROP DATABASE IF EXISTS $_;") for qw(gs_up_old gs_up_new); }

my $data = q{
SELECT setseed(0.3);
CREATE TABLE gs_up AS
SELECT g, g % 7 AS k, (random() * 1e6)::float8 AS f8, (random() * 1000)::int4 AS i4,
       interval '1 minute' * (random() * 1e4)::int AS iv, ((random() * 1e4)::int)::numeric / 100 AS n,
       md5(g::text) AS t
FROM generate_series(1, 5000) g;
};

# one view per aggregate a user calls, each with its built-in counterpart
my %views = (
	disc   => ['gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY f8)', 'percentile_disc(0.3) WITHIN GROUP (ORDER BY f8)'],
	discs  => ['gpu_percentile_disc(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY t)', 'percentile_disc(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY t)'],
	cont   => ['gpu_percentile_cont(0.7) WITHIN GROUP (ORDER BY i4)', 'percentile_cont(0.7) WITHIN GROUP (ORDER BY i4)'],
	conts  => ['gpu_percentile_cont(ARRAY[0.2, 0.5]) WITHIN GROUP (ORDER BY iv)', 'percentile_cont(ARRAY[0.2, 0.5]) WITHIN GROUP (ORDER BY iv)'],
	median => ['gpu_median(f8)', 'percentile_cont(0.5) WITHIN GROUP (ORDER BY f8)'],
	mediv  => ['gpu_median(iv)', 'percentile_cont(0.5) WITHIN GROUP (ORDER BY iv)'],
	quant  => ['gpu_quantile(n, 0.25)', 'percentile_disc(0.25) WITHIN GROUP (ORDER BY n)'],
	quants => ['gpu_quantiles(i4, ARRAY[0.5, 0.99])', 'percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY i4)'],
);
my $create_views = join('', map {
	"CREATE VIEW gs_v_$_ AS SELECT k, $views{$_}[0] AS a, $views{$_}[1] AS b FROM gs_up GROUP BY k;\n"
} sort keys %views);
$create_views .= "CREATE MATERIALIZED VIEW gs_mv AS SELECT k, gpu_quantiles(f8, ARRAY[0.1, 0.5]) AS a,
  percentile_disc(ARRAY[0.1, 0.5]) WITHIN GROUP (ORDER BY f8) AS b FROM gs_up GROUP BY k;\n";
# rows where the gpuselect aggregate and the built-in differ, over every view
my $differ = join(' + ', map { "(SELECT count(*) FROM gs_v_$_ WHERE a IS DISTINCT FROM b)" } sort keys %views)
  . ' + (SELECT count(*) FROM gs_mv WHERE a IS DISTINCT FROM b)';

psql_value("CREATE EXTENSION gpuselect VERSION '$from';\n$data\n$create_views", db => 'gs_up_old');
is(psql_value("SELECT extversion FROM pg_extension WHERE extname = 'gpuselect'", db => 'gs_up_old'), $from,
	"installed $from");
is(psql_value("SELECT $differ", db => 'gs_up_old'), '0', "$from: every view answers like the built-ins");

my ($rc, $out) = psql('ALTER EXTENSION gpuselect UPDATE;', db => 'gs_up_old');
is($rc, 0, "ALTER EXTENSION gpuselect UPDATE with views on every aggregate") or diag($out);
is(psql_value("SELECT extversion FROM pg_extension WHERE extname = 'gpuselect'", db => 'gs_up_old'), $to,
	"now at $to");
is(psql_value("REFRESH MATERIALIZED VIEW gs_mv; SELECT $differ", db => 'gs_up_old'), '0',
	'after the update: every view, and the refreshed materialized view, answers like the built-ins');

psql_value("CREATE EXTENSION gpuselect;\n$data", db => 'gs_up_new');

# the extension's catalog, as text that does not depend on OIDs
my $catalog = q{
WITH members AS (
  SELECT objid FROM pg_depend
  WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e' AND classid = 'pg_proc'::regclass
    AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'gpuselect'))
SELECT string_agg(line, E'\n' ORDER BY line) FROM (
  SELECT concat_ws(' ', 'proc', p.oid::regprocedure, p.prorettype::regtype, p.prokind, p.provolatile,
         p.proparallel, p.proisstrict, p.prosrc, p.probin, obj_description(p.oid, 'pg_proc')) AS line
  FROM pg_proc p JOIN members m ON m.objid = p.oid
  UNION ALL
  SELECT 'agg ' || a.aggfnoid::regprocedure || ' ' || concat_ws(' ', a.aggkind, a.aggnumdirectargs,
         a.aggtransfn, a.aggfinalfn, a.aggcombinefn, a.aggserialfn, a.aggdeserialfn,
         a.aggmtransfn, a.aggminvtransfn, a.aggmfinalfn, a.aggfinalextra, a.aggmfinalextra,
         a.aggfinalmodify, a.aggmfinalmodify, a.aggsortop, a.aggtranstype::regtype, a.aggtransspace,
         a.aggmtranstype::regtype, a.aggmtransspace, a.agginitval, a.aggminitval)
  FROM pg_aggregate a JOIN members m ON m.objid = a.aggfnoid
  UNION ALL
  SELECT concat_ws(' ', 'dep', pg_describe_object(d.classid, d.objid, d.objsubid), '->',
         pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid), d.deptype)
  FROM pg_depend d JOIN members m ON m.objid = d.objid
  WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_proc'::regclass
) l;
};
my $old = psql_value($catalog, db => 'gs_up_old');
my $new = psql_value($catalog, db => 'gs_up_new');
ok(length($new) > 1000, 'the fresh install has a catalog to compare');
is($old, $new, "the upgraded catalog equals a fresh $to install")
  or diag(join("\n", grep { my $l = $_; index($new, $l) < 0 } split /\n/, $old));

# what the new release adds works in the upgraded database: a rolling
# percentile as a moving window aggregate, equal to the fresh install's
my $rolling = q{SELECT md5(string_agg(q::text, ',' ORDER BY g)) FROM (
  SELECT g, gpu_quantile(f8, 0.9) OVER (ORDER BY g ROWS BETWEEN 99 PRECEDING AND CURRENT ROW) AS q FROM gs_up) r;};
is(psql_value($rolling, db => 'gs_up_old'), psql_value($rolling, db => 'gs_up_new'),
	'a rolling percentile answers the same in the upgraded database as in a fresh one');

done_testing();
