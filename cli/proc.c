/* cli/proc.c: child processes and tree removal for the commands that drive other commands
** (`sentinel run`, docs/run.md: every stage is `sentinel <stage>` in a child process, and a
** changed stage's outputs are removed before it runs again). */
#include "cli/cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int sn_cli_spawn(const char *cmd, char **argv, const char *out_path,
                 volatile sig_atomic_t *child_pid)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "sentinel %s: fork: %s\n", cmd, strerror(errno));
        return SN_EXIT_FAIL;
    }
    if (pid == 0) {
        if (out_path) {
            int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
                _exit(127);
            close(fd);
        }
        execv(argv[0], argv);
        fprintf(stderr, "sentinel %s: cannot run %s: %s\n", cmd, argv[0], strerror(errno));
        _exit(127);
    }
    if (child_pid)
        *child_pid = pid;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (child_pid)
        *child_pid = 0;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int sn_cli_remove_tree(const char *cmd, const char *path)
{
    struct stat sb;
    if (lstat(path, &sb))
        return errno == ENOENT ? 0 : -1;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        if (!d)
            goto fail;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *child = sn_path_join_new(path, e->d_name);
            int bad = !child || sn_cli_remove_tree(cmd, child);
            sn_free(child);
            if (bad) {
                closedir(d);
                return -1;
            }
        }
        closedir(d);
        if (rmdir(path))
            goto fail;
        return 0;
    }
    if (!unlink(path))
        return 0;
fail:
    fprintf(stderr, "sentinel %s: cannot remove %s: %s\n", cmd, path, strerror(errno));
    return -1;
}
