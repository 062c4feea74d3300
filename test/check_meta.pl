#!/usr/bin/perl
# test/check_meta.pl ROOT — checks ROOT/META.json, the PGXN distribution
# metadata (https://pgxn.org/spec/, meta-spec 1.0.0), before `make dist`
# packs it and in test/run-all.sh.  No PGXN validator is packaged for Debian
# (PGXN::Meta::Validator is CPAN-only, pgxn-utils a Ruby gem), so this checks
# what PGXN rejects an upload for: the required keys and their shapes, semver
# versions, a known license and release status; and what would make the
# distribution lie: files it names that are not in the tree, a version other
# than that of CHANGELOG.md's first entry, of debian/changelog and of
# gpuselect.control (whose install script must exist).
# Prints one line per problem; exit status 0 when there is none.
use strict;
use warnings;
use JSON::PP;

my $root = shift // '.';
my @problems;
sub problem { push @problems, join('', @_) }

sub slurp {
	my ($path) = @_;
	open(my $fh, '<', $path) or return undef;
	local $/;
	return <$fh>;
}

my $text = slurp("$root/META.json") // die "cannot read $root/META.json: $!\n";
my $meta = eval { JSON::PP->new->relaxed(0)->decode($text) };
die "META.json is not valid JSON: $@" unless $meta;

my $semver = qr/^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+)?$/;
my %licenses = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1 artistic_2
	bsd freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1 lgpl_3_0 mit mozilla_1_0
	mozilla_1_1 openssl perl_5 postgresql qpl_1_0 ssleay sun zlib open_source restricted
	unrestricted unknown);

for my $key (qw(name abstract maintainer license provides version meta-spec)) {
	problem("required key '$key' missing") unless exists $meta->{$key};
}
for my $key (qw(name abstract version)) {
	problem("'$key' must be a non-empty string")
		if exists $meta->{$key} && (ref $meta->{$key} || $meta->{$key} eq '');
}
problem("name '$meta->{name}' has characters PGXN refuses")
	if defined $meta->{name} && !ref $meta->{name} && $meta->{name} !~ /^[A-Za-z][A-Za-z0-9_-]+$/;
problem("version '", $meta->{version} // '', "' is not semver")
	unless defined $meta->{version} && $meta->{version} =~ $semver;
problem("meta-spec version must be 1.0.0")
	unless ref $meta->{'meta-spec'} eq 'HASH' && ($meta->{'meta-spec'}{version} // '') eq '1.0.0';
for my $l (ref $meta->{license} eq 'ARRAY' ? @{ $meta->{license} } : ($meta->{license} // '')) {
	problem("license '$l' is not one PGXN knows") unless !ref $l && $licenses{$l};
}
problem("release_status must be stable, testing or unstable")
	if exists $meta->{release_status} && $meta->{release_status} !~ /^(stable|testing|unstable)$/;
problem("maintainer must be 'Name <email>' (or a list of them)")
	unless grep { defined && !ref && /<[^@>\s]+@[^>\s]+>/ }
		(ref $meta->{maintainer} eq 'ARRAY' ? @{ $meta->{maintainer} } : ($meta->{maintainer}));

if (ref $meta->{provides} eq 'HASH' && %{ $meta->{provides} }) {
	for my $ext (sort keys %{ $meta->{provides} }) {
		my $p = $meta->{provides}{$ext};
		problem("provides.$ext must be an object"), next unless ref $p eq 'HASH';
		problem("provides.$ext: file and version are required")
			unless defined $p->{file} && defined $p->{version};
		problem("provides.$ext.version '", $p->{version} // '', "' is not semver")
			unless defined $p->{version} && $p->{version} =~ $semver;
		for my $f (grep { defined $p->{$_} } qw(file docfile)) {
			problem("provides.$ext.$f '$p->{$f}' is not in the tree") unless -f "$root/$p->{$f}";
		}
		problem("provides.$ext.version $p->{version} differs from the distribution's $meta->{version}")
			if defined $p->{version} && defined $meta->{version} && $p->{version} ne $meta->{version};
	}
} else {
	problem("provides must name at least one extension");
}

my $pg = ref $meta->{prereqs} eq 'HASH' ? $meta->{prereqs}{runtime}{requires}{PostgreSQL} : undef;
problem("prereqs.runtime.requires.PostgreSQL missing or not a version")
	unless defined $pg && $pg =~ /^\d+\.\d+\.\d+$/;

# the release's version, major.minor, as CHANGELOG.md and debian/changelog
# name it (0.2 for 0.2.0)
my ($release) = ($meta->{version} // '') =~ /^(\d+\.\d+)\./;
if (defined $release) {
	my $cl = slurp("$root/CHANGELOG.md");
	my ($first) = defined $cl ? $cl =~ /^## (\d+\.\d+(?:\.\d+)?)/m : ();
	problem("CHANGELOG.md's first entry (", $first // 'none', ") is not version $release")
		unless defined $first && ($first eq $release || $first eq $meta->{version});
	my $control = slurp("$root/gpuselect.control");
	my ($ctl) = defined $control ? $control =~ /^default_version\s*=\s*'([^']+)'/m : ();
	problem("gpuselect.control's default_version (", $ctl // 'none', ") is not $release")
		unless defined $ctl && ($ctl eq $release || $ctl eq $meta->{version});
	problem("extension/gpuselect--$release.sql, the release's install script, is missing")
		unless -f "$root/extension/gpuselect--$release.sql";
	my $dch = slurp("$root/debian/changelog");
	if (defined $dch) {
		my ($deb) = $dch =~ /^\S+ \(([^)-]+)/;
		problem("debian/changelog's version (", $deb // 'none', ") is not $release")
			unless defined $deb && ($deb eq $release || $deb eq $meta->{version});
	}
}

print "META.json: $_\n" for @problems;
print "META.json: $meta->{name} $meta->{version}: ok\n" unless @problems;
exit(@problems ? 1 : 0);
