# GsTest.pm — tiny psql driver for gpuselect's TAP tests (test/t/*.pl).
# The tests run against the throw-away cluster that test/run-all.sh starts;
# they find it through PGHOST/PGPORT/PGUSER/PGDATABASE.  Core Perl only
# (no IPC::Run needed).
package GsTest;
use strict;
use warnings;
use File::Temp qw(tempfile);
use Exporter 'import';
our @EXPORT = qw(psql psql_ok psql_value force_parallel);

my $PSQL = $ENV{GS_PSQL} // 'psql';

# psql($sql, %opt) -> ($exit_code, $output).  stdout and stderr together,
# unaligned, tuples only; VERBOSITY verbose so errors carry their SQLSTATE.
# opt: on_error_stop => 0|1 (default 1), db => name
sub psql
{
	my ($sql, %opt) = @_;
	my $stop = $opt{on_error_stop} // 1;
	my ($fh, $file) = tempfile('gs-tap-XXXXXX', TMPDIR => 1, UNLINK => 1, SUFFIX => '.sql');
	print $fh "\\set VERBOSITY verbose\nSET client_min_messages = warning;\n$sql\n";
	close $fh;
	my @cmd = ($PSQL, '-X', '-q', '-A', '-t', '-v', "ON_ERROR_STOP=$stop", '-f', $file);
	push @cmd, '-d', $opt{db} if $opt{db};
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

1;
