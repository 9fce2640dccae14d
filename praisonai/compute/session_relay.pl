# praisonai session relay (docker, kubernetes; see compute/separation.py): root's, between a
# session's frame (runtime/session.sh) and its shell, which runs as the commands' uid.
#   perl -e "<this file>" -- SHELL-ARGV...
# The shell starts as SHELL-ARGV plus "8", with three ends of ours, which no /proc/PID/fd opens
# except the pipe's: fd 8, a socket the requests come on, one line each; fd 9, a socket for its
# status lines, which this process passes to the frame's writer (its own fd 9); fd 0, a pipe of
# the input sent while a command runs. The frame's stdin (the client's requests and input)
# comes here: a line "__p_run ..." while no command runs is a request (the shell gets it on
# fd 8), what arrives while one runs is its input (fd 0); anything else, and input its command
# left unread when it ended, goes nowhere. So no program a command runs, of the shell's uid,
# can reach the requests or the statuses: it cannot type a request, read the next one, or
# write a status. Ends with the shell's exit status.
use strict;
use warnings;
use Fcntl qw(F_DUPFD F_GETFL F_SETFL O_NONBLOCK O_RDONLY);
use POSIX qw(:sys_wait_h);
use Socket;

$SIG{INT}  = "IGNORE";    # an interrupt is for the command
$SIG{PIPE} = "IGNORE";
socketpair(my $requests, my $requests_end, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die "socketpair: $!";
socketpair(my $statuses, my $statuses_end, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die "socketpair: $!";
pipe(my $input_end, my $input) or die "pipe: $!";
fcntl($input, F_SETFL, fcntl($input, F_GETFL, 0) | O_NONBLOCK) or die "fcntl: $!";
# ours, to drop what a command left unread: an open of its own, whose O_NONBLOCK is not the shell's
sysopen(my $unread, "/proc/self/fd/" . fileno($input_end), O_RDONLY | O_NONBLOCK) or die "pipe: $!";
my $shell = fork() // die "fork: $!";
if (!$shell) {    # high copies first: a target fd may be one of the ends
    my @ends = map { fcntl($_, F_DUPFD, 20) // die "dup: $!" } ($input_end, $requests_end, $statuses_end);
    POSIX::dup2($ends[$_], (0, 8, 9)[$_]) // die "dup2: $!" for 0 .. 2;
    POSIX::close($_) for @ends;
    $SIG{INT} = $SIG{PIPE} = "DEFAULT";
    exec { $ARGV[0] } @ARGV, "8" or die "exec: $!";
}
close $requests_end;
close $statuses_end;
open(my $writer, ">&=", 9) or die "fd 9: $!";
close $input_end;
$SIG{CHLD} = sub { };    # the shell's end wakes the select below

my ($running, $line, $pending, $reading, $ended) = (0, "", "", 1, 0);
while (1) {
    my ($r, $w) = ("", "");
    vec($r, fileno($statuses), 1) = 1;
    vec($r, 0, 1) = 1 if $reading && !$ended && length($pending) < 65536;
    vec($w, fileno($input), 1) = 1 if length $pending;
    my $ready = select($r, $w, undef, $ended ? 0 : 1);
    if ($ready <= 0) {    # a subshell may hold the socket after the shell exited: its exit ends this
        last if $ended;
        $ended = waitpid($shell, WNOHANG) == $shell;
        next;
    }
    if (vec($r, fileno($statuses), 1)) {
        sysread($statuses, my $data, 65536) or last;
        syswrite($writer, $data);
        if ($data =~ tr/\n//) {    # a command ended: the input it left goes nowhere
            ($running, $line, $pending) = (0, "", "");
            1 while sysread($unread, my $left, 65536);
        }
    }
    if (vec($r, 0, 1)) {
        if (!sysread(STDIN, my $data, 65536)) {    # the client is gone: so are the requests
            ($reading, $pending) = (0, "");
            close $input;
            shutdown($requests, 1);
        }
        elsif ($running) { $pending .= $data }
        else             { take($data) }
    }
    if (length $pending && vec($w, fileno($input), 1)) {
        my $put = syswrite($input, $pending);
        substr($pending, 0, $put) = "" if $put;
    }
}
waitpid($shell, 0) if !$ended;
exit(($? & 127) ? 128 + ($? & 127) : $? >> 8);

sub take {    # no command runs: lines until a request, whose rest is its input
    $line .= shift;
    while (!$running && (my $at = index($line, "\n")) >= 0) {
        my $one = substr($line, 0, $at + 1, "");
        next if $one !~ /^__p_run /;
        for (my $at = 0; $at < length $one;) {
            my $put = syswrite($requests, $one, length($one) - $at, $at) // last;
            $at += $put;
        }
        $running = 1;
    }
    ($pending, $line) = ($line, "") if $running;
}
