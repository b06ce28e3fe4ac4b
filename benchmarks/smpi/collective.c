/* One collective call, timed under SMPI (SimGrid) for benchmarks/bench_smpi.py.
 *
 *   smpirun ... collective allreduce NBYTES     MPI_Allreduce of NBYTES unsigned chars (MPI_SUM)
 *   smpirun ... collective alltoall NBYTES      MPI_Alltoall, NBYTES per destination (MPI_BYTE)
 *   smpirun ... collective pingpong NBYTES      rank 0 sends NBYTES to rank P-1 (calibration)
 *
 * The algorithm is the one forced with --cfg=smpi/allreduce:NAME or
 * --cfg=smpi/alltoall:NAME. After a barrier every rank sleeps until a common
 * simulated instant (the latest rank's clock + 1 ms), so all ranks enter the
 * collective at the same time, as in topocoll's simulator; rank 0 prints the
 * largest (exit - start) over the ranks as "time_s <seconds>". Buffers come
 * from SMPI_SHARED_MALLOC: their content is garbage, their timing is not.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc != 3) {
    if (rank == 0)
      fprintf(stderr, "usage: collective allreduce|alltoall|pingpong NBYTES\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char *what = argv[1];
  long n = atol(argv[2]);
  size_t bytes = strcmp(what, "alltoall") == 0 ? (size_t)n * (size_t)p : (size_t)n;
  unsigned char *sendbuf = SMPI_SHARED_MALLOC(bytes);
  unsigned char *recvbuf = SMPI_SHARED_MALLOC(bytes);

  /* a common start instant: the latest clock after the barrier, plus 1 ms */
  MPI_Barrier(MPI_COMM_WORLD);
  double now = MPI_Wtime(), latest = 0.0;
  MPI_Reduce(&now, &latest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Bcast(&latest, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  double start = latest + 1e-3;
  double wait = start - MPI_Wtime();
  struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
  nanosleep(&ts, NULL);
  start = MPI_Wtime();

  if (strcmp(what, "allreduce") == 0) {
    MPI_Allreduce(sendbuf, recvbuf, (int)n, MPI_UNSIGNED_CHAR, MPI_SUM, MPI_COMM_WORLD);
  } else if (strcmp(what, "alltoall") == 0) {
    MPI_Alltoall(sendbuf, (int)n, MPI_BYTE, recvbuf, (int)n, MPI_BYTE, MPI_COMM_WORLD);
  } else if (strcmp(what, "pingpong") == 0) {
    if (rank == 0)
      MPI_Send(sendbuf, (int)n, MPI_BYTE, p - 1, 0, MPI_COMM_WORLD);
    else if (rank == p - 1)
      MPI_Recv(recvbuf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    if (rank == 0)
      fprintf(stderr, "collective: %s, expected allreduce, alltoall or pingpong\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double took = MPI_Wtime() - start, slowest = 0.0, earliest = 0.0, last = 0.0;
  MPI_Reduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&start, &earliest, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  MPI_Reduce(&start, &last, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("time_s %.12e start_spread_s %.3e\n", slowest, last - earliest);
  SMPI_SHARED_FREE(sendbuf);
  SMPI_SHARED_FREE(recvbuf);
  MPI_Finalize();
  return 0;
}
