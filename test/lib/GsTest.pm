# GsTest.pm — tiny psql driver for gpuselect's TAP tests (test/t/*.pl).
# The tests run against the throw-away cluster that test/run-all.sh starts;
# they find it through PGHOST/PGPORT/PGUSER/PGDATABASE.  Core Perl only
# (no IPC::Run needed).
package GsTest;
use strict;
use warnings;
use File::Temp qw(tempfile);
use Exporter 'import';
our @EXPORT = qw(psql psql_ok psql_value force_parallel force_parallel_executor create_parallel_table parallel_table_queries);

my $PSQL = $ENV{GS_PSQL} // 'psql';

# psql($sql, %opt) -> ($exit_code, $output).  stdout and stderr together,
# unaligned, tuples only; VERBOSITY verbose so errors carry their SQLSTATE.
# opt: on_error_stop => 0|1 (default 1), db => name
# psql_cmd($sql, %opt) -> the psql command line (a list) that runs $sql from
# a temporary file, as psql() and psql_bg() run it
sub psql_cmd
{
	my ($sql, %opt) = @_;
	my $stop = $opt{on_error_stop} // 1;
	my ($fh, $file) = tempfile('gs-tap-XXXXXX', TMPDIR => 1, UNLINK => 1, SUFFIX => '.sql');
	print $fh "\\set VERBOSITY verbose\nSET client_min_messages = warning;\n$sql\n";
	close $fh;
	my @cmd = ($PSQL, '-X', '-q', '-A', '-t', '-v', "ON_ERROR_STOP=$stop", '-f', $file);
	push @cmd, '-d', $opt{db} if $opt{db};
	return @cmd;
}

sub psql
{
	my @cmd = psql_cmd(@_);
	my $cmd = join(' ', map { "'$_'" } @cmd) . ' 2>&1';
	my $out = `$cmd`;
	my $rc = $? >> 8;
	chomp $out;
	return ($rc, $out);
}

# psql_value($sql) -> output; dies on error
sub psql_value
{
	my ($sql, %opt) = @_;
	my ($rc, $out) = psql($sql, %opt);
	die "psql failed ($rc): $out\nSQL: $sql\n" if $rc != 0;
	return $out;
}

# force_parallel($workers) -> SET commands that make the planner choose a
# parallel plan with that many workers even for small tables
sub force_parallel
{
	my ($workers) = @_;
	return "SET max_parallel_workers_per_gather = $workers;\n"
	  . "SET parallel_setup_cost = 0;\n"
	  . "SET parallel_tuple_cost = 0;\n"
	  . "SET min_parallel_table_scan_size = 0;\n";
}

# force_parallel_executor($workers) -> force_parallel's settings with the
# bulk scan off: the parallel plan is the executor's Partial Aggregate under
# a Gather, whose transport of partial states (handover, shared segments,
# the arena, key-pool leases) the test is about.  The bulk scan's own
# parallel plans are tested by sql/bulk_scan.sql and t/017.
sub force_parallel_executor
{
	my ($workers) = @_;
	return force_parallel($workers) . "SET gpuselect.bulk_scan = off;\n";
}

# create_parallel_table($name) -> the table the parallel-plan tests share:
# 900000 rows of float8 x (NULLs, NaN, -0 among uniform values of both
# signs), int4 i4, int2 i2 and a 4-group key grp.  With 2 workers and the
# leader a partial state holds ~2.4 MB of float8 keys, ~1.2 MB of int4 and
# ~0.6 MB of int2.
sub create_parallel_table
{
	my ($name) = @_;
	psql_value(qq{
CREATE EXTENSION IF NOT EXISTS gpuselect;
DROP TABLE IF EXISTS $name;
CREATE TABLE $name AS
  SELECT CASE WHEN g % 997 = 0 THEN NULL
              WHEN g % 1999 = 0 THEN 'NaN'::float8
              WHEN g % 2503 = 0 THEN '-0'::float8
              ELSE (random() * 2e6 - 1e6)::float8 END AS x,
         ((g::int8 * 7919) % 1000003)::int4 AS i4,
         (g % 30011 - 15000)::int2 AS i2,
         g % 4 AS grp
  FROM generate_series(1, 900000) g;
ANALYZE $name;
});
	return $name;
}

# parallel_table_queries($name) -> ($gpuselect, $builtin): the same answers
# (three plain gpuselect aggregates and their built-in twins) over the
# columns of create_parallel_table, each as one line; no trailing ';'
sub parallel_table_queries
{
	my ($name) = @_;
	my $fr = q{ARRAY[0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999, 1]::float8[]};
	return ("SELECT concat_ws(' | ', gpu_quantiles(x, $fr), gpu_median(x), gpu_quantile(i4, 0.3),"
		  . " gpu_quantiles(i2, $fr)) FROM $name",
		"SELECT concat_ws(' | ', percentile_disc($fr) WITHIN GROUP (ORDER BY x),"
		  . " percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(0.3) WITHIN GROUP (ORDER BY i4),"
		  . " percentile_disc($fr) WITHIN GROUP (ORDER BY i2)) FROM $name");
}

# psql_bg($sql, %opt) -> a handle: psql($sql, %opt) started in the
# background, a session of its own; psql_wait($handle) -> ($exit_code,
# $output) once it has finished.  Not exported: GsTest::psql_bg(...).
use POSIX ();

sub psql_bg
{
	my @cmd = psql_cmd(@_);
	my (undef, $outfile) = tempfile('gs-tap-XXXXXX', TMPDIR => 1, UNLINK => 1, SUFFIX => '.out');
	my $pid = fork() // die "fork: $!";
	if ($pid == 0)
	{
		# the child only execs psql: no Perl cleanup (temp files, Test::More) runs in it
		open(STDOUT, '>', $outfile) or POSIX::_exit(127);
		open(STDERR, '>&', \*STDOUT) or POSIX::_exit(127);
		exec(@cmd) or POSIX::_exit(127);
	}
	return { pid => $pid, out => $outfile };
}

sub psql_wait
{
	my ($h) = @_;
	waitpid($h->{pid}, 0);
	my $rc = $? >> 8;
	open(my $fh, '<', $h->{out}) or die "$h->{out}: $!";
	local $/;
	my $out = <$fh> // '';
	close $fh;
	chomp $out;
	return ($rc, $out);
}

# ---- a cluster of the test's own (GPU service tests) ----
# service_cluster_start(@conf_lines) -> a handle: initdb + pg_ctl start of a
# new cluster with the same binaries as the server under test (read from
# its postmaster.opts: the private install tree with gpuselect in it), the
# given postgresql.conf lines (e.g. shared_preload_libraries), its own
# socket directory and port; PGHOST/PGPORT then point at it until
# service_cluster_stop($handle).  As root the server runs as postgres, as
# test/lib/pgenv.sh does.  Not exported: GsTest::service_cluster_start(...).
use File::Temp qw(tempdir);
use File::Basename qw(dirname);

sub _as_server_user
{
	my @cmd = @_;
	# GS_SERVER_USER: the server's user when running as root (the GPU
	# machine's bundles use pgrun)
	my $user = $ENV{GS_SERVER_USER} // 'postgres';
	# the bundles' libraries (pg-up exports LD_LIBRARY_PATH), passed on explicitly
	unshift @cmd, 'env', "LD_LIBRARY_PATH=$ENV{LD_LIBRARY_PATH}" if $ENV{LD_LIBRARY_PATH};
	return $> == 0 ? ('runuser', '-u', $user, '--', @cmd) : @cmd;
}

# run a command with its stdout discarded; its exit status
sub _quiet
{
	my @cmd = @_;
	my $pid = fork() // die "fork: $!";
	if ($pid == 0)
	{
		open(STDOUT, '>', '/dev/null') or POSIX::_exit(127);
		exec(@cmd) or POSIX::_exit(127);
	}
	waitpid($pid, 0);
	return $? >> 8;
}

sub service_cluster_start
{
	my (@conf) = @_;
	my $opts = psql_value("SELECT pg_read_file('postmaster.opts')");
	my ($postgres) = $opts =~ /^"?([^"\s]+)/ or die "no binary in postmaster.opts: $opts";
	my $bindir = dirname($postgres);
	my $dir = tempdir('gs-svc-XXXXXX', TMPDIR => 1, CLEANUP => 1);
	chmod 0755, $dir;
	if ($> == 0)
	{
		my (undef, undef, $uid, $gid) = getpwnam($ENV{GS_SERVER_USER} // 'postgres');
		chown $uid, $gid, $dir;
	}
	my $port = 7600 + int(rand(1500));
	$port++ while -e "/tmp/.s.PGSQL.$port";
	_quiet(_as_server_user("$bindir/initdb", '-D', "$dir/data", '-U', 'postgres', '-A', 'trust',
			'--no-sync', '-E', 'UTF8', '--locale=C')) == 0
	  or die "initdb failed";
	open(my $fh, '>>', "$dir/data/postgresql.conf") or die "$!";
	print $fh "listen_addresses = ''\nunix_socket_directories = '$dir'\nport = $port\n"
	  . "fsync = off\nsynchronous_commit = off\nshared_buffers = 64MB\n"
	  . join('', map { "$_\n" } @conf);
	close $fh;
	_quiet(_as_server_user("$bindir/pg_ctl", '-D', "$dir/data", '-l', "$dir/server.log",
			'-w', '-t', '120', 'start')) == 0
	  or die "pg_ctl start failed:\n" . `cat $dir/server.log`;
	my $h = { dir => $dir, bindir => $bindir, log => "$dir/server.log",
		old => { PGHOST => $ENV{PGHOST}, PGPORT => $ENV{PGPORT}, PGUSER => $ENV{PGUSER} } };
	$ENV{PGHOST} = $dir;
	$ENV{PGPORT} = $port;
	# its superuser is initdb's -U, whoever the server under test runs as
	# (the GPU machine's bundles connect as pgrun)
	$ENV{PGUSER} = 'postgres';
	return $h;
}

sub service_cluster_stop
{
	my ($h) = @_;
	_quiet(_as_server_user("$h->{bindir}/pg_ctl", '-D', "$h->{dir}/data", '-m', 'fast', '-w', 'stop'));
	for my $k (keys %{ $h->{old} })
	{
		if (defined $h->{old}{$k}) { $ENV{$k} = $h->{old}{$k}; }
		else { delete $ENV{$k}; }
	}
}

# A Citus cluster on this machine (TAP 015, 018): a coordinator and two
# workers, each a cluster of its own (service_cluster_start, with @conf),
# citus and gpuselect created on each and the workers added.  Returns the
# nodes ({host, port, h}: h is service_cluster_start's handle), the
# coordinator first; citus_cluster_stop stops them and gives the
# environment back.
sub citus_cluster_start
{
	my (@conf) = @_;
	my @nodes;
	# a failure part way stops what started, then dies as it would have
	eval {
		for my $i (0 .. 2)
		{
			my $h = service_cluster_start(@conf);
			push @nodes, { host => $ENV{PGHOST}, port => $ENV{PGPORT}, h => $h };
		}
		citus_on(\@nodes, $_, 'CREATE EXTENSION citus; CREATE EXTENSION gpuselect;') for 0 .. 2;
		citus_on(\@nodes, 0, "SELECT citus_set_coordinator_host('$nodes[0]{host}', $nodes[0]{port});"
			  . join('', map { "SELECT citus_add_node('$nodes[$_]{host}', $nodes[$_]{port});" } 1, 2));
		1;
	} or do {
		my $why = $@;
		citus_cluster_stop(\@nodes);
		die $why;
	};
	return @nodes;
}

# in reverse order: each handle saved the environment of the one before
sub citus_cluster_stop
{
	my ($nodes) = @_;
	service_cluster_stop($_->{h}) for reverse @$nodes;
}

# SQL on node $n (0: the coordinator): psql_value, or psql's (rc, out,
# err) with may_fail => 1
sub citus_on
{
	my ($nodes, $n, $sql, %opt) = @_;
	local $ENV{PGHOST} = $nodes->[$n]{host};
	local $ENV{PGPORT} = $nodes->[$n]{port};
	return $opt{may_fail} ? psql($sql) : psql_value($sql);
}

# the service mode the service tests run: cpu_test (CI), or on
# (GS_SERVICE_MODE=on: the CUDA engine, on the GPU machine)
sub service_mode { return $ENV{GS_SERVICE_MODE} // 'cpu_test'; }

# service_pool_baseline($seconds) -> true once no chunk is used or held by a
# scan, no job slot is busy and no prefetched copy is left (the pool back
# to how a test found it)
sub service_pool_baseline
{
	my ($seconds) = @_;
	return wait_for(sub {
		my $s = service_status();
		$s->{key_pool_used_bytes} == 0 && $s->{key_pool_scan_bytes} == 0
		  && $s->{service_slots_in_use} == 0
		  && ($s->{service_prefetch_resident_bytes} // 0) == 0
	}, $seconds);
}

# service_status() -> { name => value } of gpuselect_status()
sub service_status
{
	my %st;
	for my $line (split /\n/, psql_value("SELECT name || '=' || coalesce(value, '') FROM gpuselect_status()"))
	{
		my ($k, $v) = split /=/, $line, 2;
		$st{$k} = $v;
	}
	return \%st;
}

# wait_for(sub { ... }, $seconds) -> true once the sub returns true
sub wait_for
{
	my ($cond, $secs) = @_;
	for (1 .. $secs * 10)
	{
		return 1 if $cond->();
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

1;
