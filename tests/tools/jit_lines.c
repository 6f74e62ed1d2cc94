// SPDX-License-Identifier: GPL-2.0-only
/*
 * jit_lines OBJ PROG: where each source line of BPF program PROG (of object
 * OBJ) sits in its JIT image. It loads the program alone (private maps,
 * nothing pinned, nothing attached) and prints its tags and main function's
 * size ("# PROG tag TAG MAINTAG: main function N bytes of JIT image"), then, for each
 * entry of the kernel's jited line info in the main function, "OFFSET
 * FILE:LINE SOURCE" with OFFSET in hex from the function's start.
 *
 * What it is for: this machine's bpftool has no disassembler (no libbfd) and
 * its perf cannot annotate BPF, but perf's cpu-clock samples name a program
 * and an offset in it (bpf_prog_TAG_NAME+0xOFF); scripts/profile.sh maps
 * those offsets to source lines with this table. The program is loaded with
 * zeroed .rodata, so code the verifier removes by a .rodata value may sit
 * elsewhere in the instance that was sampled; the data path's branches do
 * not depend on its .rodata.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

/* The last path component of @path. */
static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path ? path : "?";
}

int main(int argc, char **argv)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info), nli, njli, nks, nfl, ntags, lirec, i;
	__u8 (*tags)[BPF_TAG_SIZE];
	struct bpf_program *p, *want = NULL;
	struct bpf_line_info *li;
	const struct btf *btf;
	struct bpf_object *obj;
	__u64 *jli, *ks;
	__u32 *flens;
	struct bpf_map *m;
	int fd, err;

	if (argc != 3) {
		fprintf(stderr, "usage: jit_lines OBJ PROG\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "jit_lines: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	bpf_object__for_each_map(m, obj)
		bpf_map__set_pin_path(m, NULL);
	bpf_object__for_each_program(p, obj) {
		if (strcmp(bpf_program__name(p), argv[2]) == 0)
			want = p;
		else
			bpf_program__set_autoload(p, false);
	}
	if (!want) {
		fprintf(stderr, "jit_lines: %s has no program %s\n", argv[1], argv[2]);
		return 1;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "jit_lines: load %s: %s\n", argv[2], strerror(-err));
		return 1;
	}
	fd = bpf_program__fd(want);
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "jit_lines: program info: %s\n", strerror(errno));
		return 1;
	}
	nli = info.nr_line_info;
	njli = info.nr_jited_line_info;
	nks = info.nr_jited_ksyms;
	nfl = info.nr_jited_func_lens;
	ntags = info.nr_prog_tags;
	lirec = info.line_info_rec_size;
	if (!nli || njli != nli || !nks || !nfl) {
		fprintf(stderr, "jit_lines: %s has no line info for its JIT image\n", argv[2]);
		return 1;
	}
	li = calloc(nli, lirec);
	jli = calloc(njli, sizeof(*jli));
	ks = calloc(nks, sizeof(*ks));
	flens = calloc(nfl, sizeof(*flens));
	tags = calloc(ntags ? ntags : 1, sizeof(*tags));
	if (!li || !jli || !ks || !flens || !tags)
		return 1;
	memset(&info, 0, sizeof(info));
	info.nr_line_info = nli;
	info.line_info_rec_size = lirec;
	info.line_info = (__u64)(unsigned long)li;
	info.nr_jited_line_info = njli;
	info.jited_line_info_rec_size = sizeof(*jli);
	info.jited_line_info = (__u64)(unsigned long)jli;
	info.nr_jited_ksyms = nks;
	info.jited_ksyms = (__u64)(unsigned long)ks;
	info.nr_jited_func_lens = nfl;
	info.jited_func_lens = (__u64)(unsigned long)flens;
	info.nr_prog_tags = ntags;
	info.prog_tags = (__u64)(unsigned long)tags;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "jit_lines: line info: %s\n", strerror(errno));
		return 1;
	}
	/* The kernel withholds JIT addresses from whom may not see kernel pointers. */
	if (!info.jited_ksyms || !info.jited_line_info || !flens[0]) {
		fprintf(stderr, "jit_lines: the kernel gave no JIT addresses (root, and "
				"kernel.kptr_restrict below 2, are needed)\n");
		return 1;
	}
	/*
	 * Two tags: the program's, which perf names it by when it is loaded
	 * while perf records, and its main function's, when it was loaded
	 * before (they differ when it has global functions).
	 */
	printf("# %s tag ", argv[2]);
	for (i = 0; i < BPF_TAG_SIZE; i++)
		printf("%02x", info.tag[i]);
	printf(" ");
	for (i = 0; i < BPF_TAG_SIZE; i++)
		printf("%02x", ntags ? tags[0][i] : info.tag[i]);
	printf(": main function %u bytes of JIT image\n", flens[0]);
	btf = bpf_object__btf(obj);
	for (i = 0; i < njli; i++) {
		const struct bpf_line_info *l = (const void *)((const char *)li + (size_t)i * lirec);
		const char *line;

		if (jli[i] < ks[0] || jli[i] - ks[0] >= flens[0])
			continue;
		line = btf__name_by_offset(btf, l->line_off);
		printf("%llx %s:%u %s\n", (unsigned long long)(jli[i] - ks[0]),
		       base_name(btf__name_by_offset(btf, l->file_name_off)),
		       BPF_LINE_INFO_LINE_NUM(l->line_col), line ? line : "");
	}
	free(li);
	free(jli);
	free(ks);
	free(flens);
	free(tags);
	bpf_object__close(obj);
	return 0;
}
