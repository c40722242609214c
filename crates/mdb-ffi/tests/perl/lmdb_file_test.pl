#!/usr/bin/perl
# Debian's LMDB_File (liblmdb-file-perl) over whichever liblmdb.so.0 is
# loaded; tests/perl_binding.rs points LD_LIBRARY_PATH at ours and sets
# EXPECT_LIB. Usage: perl lmdb_file_test.pl <scratch dir>
use strict;
use warnings;
use LMDB_File qw(:flags :cursor_op :error);
use Cwd qw(realpath);

my $base = shift or die "usage: $0 <dir>\n";
my $checks = 0;
sub check { my ($ok, $what) = @_; $checks++; die "failed: $what\n" unless $ok; }

# the library really loaded
open my $maps, '<', '/proc/self/maps' or die;
my @mapped = grep { m{liblmdb} } <$maps>;
close $maps;
check(scalar @mapped, 'liblmdb mapped');
if (my $want = $ENV{EXPECT_LIB}) {
    my $real = realpath($want);
    check((grep { index($_, $real) >= 0 } @mapped), "mapped $real: @mapped");
}
my ($maj, $min, $pat);
my $ver = LMDB_File::version($maj, $min, $pat);
check($maj == 0 && $min == 9, "runtime version $ver");

mkdir "$base/env";
my $env = LMDB::Env->new("$base/env", { mapsize => 4 << 20, maxdbs => 4 });
check($env->get_maxkeysize == 511, 'maxkeysize');

my $txn = $env->BeginTxn;
my $db = $txn->OpenDB({ dbname => 'fruits', flags => MDB_CREATE });
$db->put('apple', 'red');
$db->put('banana', 'yellow');
$db->put('cherry', 'dark red');
check($db->get('apple') eq 'red', 'get in txn');
$txn->commit;

$txn = $env->BeginTxn(MDB_RDONLY);
$db = $txn->OpenDB('fruits');
check($db->get('banana') eq 'yellow', 'get after commit');
my $stat = $db->stat;
check($stat->{entries} == 3, 'stat entries');
my $cur = $db->Cursor;
my ($k, $v);
my @keys;
$cur->get($k, $v, MDB_FIRST);
push @keys, $k;
while (eval { $cur->get($k, $v, MDB_NEXT); 1 }) { push @keys, $k; }
check("@keys" eq 'apple banana cherry', "cursor walk: @keys");
check($LMDB_File::last_err == MDB_NOTFOUND, 'walk ends with NOTFOUND');
$k = 'b';
$cur->get($k, $v, MDB_SET_RANGE);
check($k eq 'banana' && $v eq 'yellow', 'SET_RANGE');
$txn->abort;

# delete, dupsort, errors
$txn = $env->BeginTxn;
$db = $txn->OpenDB('fruits');
$db->del('apple');
check(!defined(eval { $db->get('apple') }) , 'deleted');
my $dups = $txn->OpenDB({ dbname => 'dups', flags => MDB_CREATE | MDB_DUPSORT });
$dups->put('k', $_) for qw(c a b);
my $dc = $dups->Cursor;
$k = 'k';
$dc->get($k, $v, MDB_SET);
check($v eq 'a', 'first dup');
$dc->get($k, $v, MDB_NEXT_DUP);
check($v eq 'b', 'next dup');
$dc->count(my $n);
check($n == 3, 'cursor count');
check(!eval { $db->put('', 'x'); 1 } && $@ =~ /MDB_BAD_VALSIZE/, "empty key: $@");
$txn->commit;

# nested transaction
$txn = $env->BeginTxn;
my $child = $txn->SubTxn;
my $cdb = $child->OpenDB('fruits');
$cdb->put('date', 'brown');
$child->abort;
$db = $txn->OpenDB('fruits');
check(!defined(eval { $db->get('date') }), 'child abort');
$txn->commit;

# a Perl comparator, through mdb_set_compare's C callback
$txn = $env->BeginTxn;
my $ci = $txn->OpenDB({ dbname => 'nocase', flags => MDB_CREATE });
$ci->set_compare(sub { lc($a) cmp lc($b) });
$ci->put($_, 1) for qw(b C a);
my $cc = $ci->Cursor;
@keys = ();
$cc->get($k, $v, MDB_FIRST);
push @keys, $k;
while (eval { $cc->get($k, $v, MDB_NEXT); 1 }) { push @keys, $k; }
check("@keys" eq 'a b C', "custom order: @keys");
$txn->commit;

# tied hash interface
$txn = $env->BeginTxn;
tie my %h, $txn->OpenDB('fruits');
check($h{banana} eq 'yellow', 'tied fetch');
$h{elder} = 'black';
check(exists $h{elder}, 'tied store');
untie %h;
$txn->commit;

$env->sync(1);
my $info = $env->info;
check($info->{last_txnid} >= 2, 'info last_txnid');
undef $env;
print "perl: $checks checks passed\n";
