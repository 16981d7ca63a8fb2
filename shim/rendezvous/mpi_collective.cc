#include "shim/rendezvous/mpi_collective.h"

#include <cstdint>

#include "shim/base/dynlib.h"

namespace aml {
namespace {

// Handles are pointers to predefined objects in Open MPI and integers in the
// MPICH ABI (MPICH, Intel MPI, MVAPICH2); the functions are the same.
template <class H>
struct MpiAbi {
  using Comm = H;
  int (*Init_thread)(int*, char***, int, int*) = nullptr;
  int (*Initialized)(int*) = nullptr;
  int (*Finalize)() = nullptr;
  int (*Comm_rank)(Comm, int*) = nullptr;
  int (*Comm_size)(Comm, int*) = nullptr;
  int (*Comm_split_type)(Comm, int, int, H, Comm*) = nullptr;
  int (*Comm_free)(Comm*) = nullptr;
  int (*Allgather)(const void*, int, H, void*, int, H, Comm) = nullptr;
  int (*Bcast)(void*, int, H, int, Comm) = nullptr;
  Comm comm_world{};
  H byte{};
  H info_null{};
  int comm_type_shared = 0;
};

constexpr int kThreadFunneled = 1;  // the same in both ABIs

template <class H>
class MpiCollective : public Collective {
 public:
  MpiCollective(MpiAbi<H> abi, std::string lib_name)
      : abi_(abi), lib_name_(std::move(lib_name)) {}
  ~MpiCollective() override {
    if (local_set_) abi_.Comm_free(&local_);
    if (initialised_) abi_.Finalize();
    // The library stays loaded: Open MPI's components may still be mapped.
  }

  Status Init() {
    int already = 0;
    abi_.Initialized(&already);
    if (already) return Error{"MPI is already initialised in this process"};
    int provided = 0;
    if (abi_.Init_thread(nullptr, nullptr, kThreadFunneled, &provided) != 0)
      return Error{"MPI_Init_thread failed in " + lib_name_};
    initialised_ = true;
    if (abi_.Comm_rank(abi_.comm_world, &rank_) != 0 ||
        abi_.Comm_size(abi_.comm_world, &size_) != 0)
      return Error{"MPI_Comm_rank/size failed in " + lib_name_};
    if (abi_.Comm_split_type(abi_.comm_world, abi_.comm_type_shared, rank_,
                             abi_.info_null, &local_) != 0)
      return Error{"MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed in " + lib_name_};
    local_set_ = true;
    abi_.Comm_rank(local_, &local_rank_);
    abi_.Comm_size(local_, &local_size_);
    return Ok{};
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }

  Result<std::string> AllgatherWorld(const std::string& mine) override {
    return Gather(mine, abi_.comm_world, size_);
  }
  Result<std::string> AllgatherLocal(const std::string& mine) override {
    return Gather(mine, local_, local_size_);
  }
  Result<std::string> Broadcast(const std::string& data) override {
    int32_t n = rank_ == 0 ? static_cast<int32_t>(data.size()) : 0;
    if (abi_.Bcast(&n, 4, abi_.byte, 0, abi_.comm_world) != 0)
      return Error{"MPI_Bcast failed"};
    std::string out = rank_ == 0 ? data : std::string(static_cast<size_t>(n), '\0');
    if (n > 0 && abi_.Bcast(out.data(), n, abi_.byte, 0, abi_.comm_world) != 0)
      return Error{"MPI_Bcast failed"};
    return out;
  }

 private:
  Result<std::string> Gather(const std::string& mine, H comm, int n) {
    std::string out(mine.size() * static_cast<size_t>(n), '\0');
    int len = static_cast<int>(mine.size());
    if (abi_.Allgather(mine.data(), len, abi_.byte, out.data(), len, abi_.byte, comm) != 0)
      return Error{"MPI_Allgather failed"};
    return out;
  }

  MpiAbi<H> abi_;
  std::string lib_name_;
  bool initialised_ = false;
  bool local_set_ = false;
  H local_{};
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

template <class H>
Status Bind(const Library& lib, MpiAbi<H>& a) {
  return lib.Bind({Sym("MPI_Init_thread", &a.Init_thread), Sym("MPI_Initialized", &a.Initialized),
                   Sym("MPI_Finalize", &a.Finalize), Sym("MPI_Comm_rank", &a.Comm_rank),
                   Sym("MPI_Comm_size", &a.Comm_size),
                   Sym("MPI_Comm_split_type", &a.Comm_split_type),
                   Sym("MPI_Comm_free", &a.Comm_free), Sym("MPI_Allgather", &a.Allgather),
                   Sym("MPI_Bcast", &a.Bcast)});
}

template <class H>
Result<std::unique_ptr<Collective>> Start(const Library& lib, MpiAbi<H> abi) {
  auto bound = Bind(lib, abi);
  if (!bound.ok()) return bound.error();
  auto c = std::make_unique<MpiCollective<H>>(abi, lib.file());
  auto st = c->Init();
  if (!st.ok()) return st.error();
  return std::unique_ptr<Collective>(std::move(c));
}

}  // namespace

LibrarySpec MpiLibrarySpec(Launcher source) {
  LibrarySpec spec{"the launcher's MPI library (libmpi)", "AML_SHIM_LIBMPI", {},
                   "or set MASTER_ADDR / --master-addr", /*global=*/true};
  // RTLD_GLOBAL: Open MPI's plugins resolve libmpi's symbols globally.
  if (source == Launcher::kOpenMpi || source == Launcher::kPmix)
    spec.candidates = {"libmpi.so.40", "libmpi.so"};
  else  // Hydra (MPICH, Intel MPI) and MVAPICH2 share the MPICH ABI.
    spec.candidates = {"libmpi.so.12", "libmpich.so.12", "libmpi.so"};
  return spec;
}

Result<std::unique_ptr<Collective>> OpenMpiCollective(const EnvSnapshot& env,
                                                      Launcher source) {
  auto lib = OpenLibrary(MpiLibrarySpec(source), env);
  if (!lib.ok()) return lib.error();
  if (void* world = lib->Find("ompi_mpi_comm_world")) {
    MpiAbi<void*> abi;
    abi.comm_world = world;
    abi.byte = lib->Find("ompi_mpi_byte");
    abi.info_null = lib->Find("ompi_mpi_info_null");
    abi.comm_type_shared = 0;  // first of Open MPI's enum
    if (!abi.byte || !abi.info_null)
      return Error{lib->file() + " looks like Open MPI but lacks ompi_mpi_byte or ompi_mpi_info_null"};
    return Start(*lib, abi);
  }
  if (lib->Find("MPIR_Init_thread") || lib->Find("PMPI_Init_thread")) {
    MpiAbi<int> abi;  // the MPICH ABI's fixed handle values
    abi.comm_world = 0x44000000;
    abi.byte = 0x4c00010d;
    abi.info_null = 0x1c000000;
    abi.comm_type_shared = 1;
    return Start(*lib, abi);
  }
  return Error{lib->file() + " is not an MPI library aml-shim knows (neither Open MPI's nor "
               "MPICH's ABI)"};
}

}  // namespace aml
