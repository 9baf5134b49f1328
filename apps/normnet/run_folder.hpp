// The files of a run folder and what survives a crash. A checkpoint is a pair: model.safetensors
// (the state_dict PyTorch loads) and training_state.safetensors (what --resume needs besides).
// The pair is committed so that whenever a run dies (kill -9, a full disk, a second signal) the
// folder holds a complete, matching pair from the last commit:
//   1. the new training state is written (atomically) as training_state.next.safetensors;
//   2. model.safetensors is replaced (atomically); its metadata names the state's checksum.
//      This rename is the commit: before it the old pair is whole, after it the new one;
//   3. training_state.next.safetensors is renamed to training_state.safetensors.
// A reader takes whichever state file has the checksum the model names, so a crash between 2 and
// 3 loses nothing, and a state written in 1 without its model (a crash before 2) is ignored.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "normnet/checkpoint.hpp"

namespace normnet::cli {

inline constexpr const char* kModelFile = "model.safetensors";
inline constexpr const char* kStateFile = "training_state.safetensors";
inline constexpr const char* kNextStateFile = "training_state.next.safetensors";
inline constexpr const char* kMetricsFile = "metrics.csv";
inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kLockFile = ".normnet.lock";

/// What a checkpoint holds, before it is written.
struct CheckpointContents {
    NamedTensors model, state;
    std::map<std::string, std::string> model_metadata, state_metadata;
};

/// Writes the pair into dir as described above. Throws normnet::Error (naming the file and the
/// cause, e.g. "No space left on device") with the previous pair still complete.
void commit_checkpoint(const std::string& dir, CheckpointContents contents);

/// A checkpoint read back: the model file and the training state that belongs to it.
struct LoadedCheckpoint {
    SafetensorsData model, state;
    std::string state_path;  ///< the file the state was read from
    std::string note;        ///< what was ignored on the way (an incomplete newer checkpoint), or empty
};

/// The model file a --resume or --checkpoint argument names: the file itself, or model.safetensors
/// in a run folder.
std::string model_file_of(const std::string& path);

/// Reads the model file `model_path` and the training state beside it whose checksum it names.
/// Throws normnet::Error when there is none (naming what was found instead).
LoadedCheckpoint read_checkpoint(const std::string& model_path);

/// Finishes what a crash interrupted in the folder of a checkpoint about to be resumed: the
/// pending rename of step 3, an orphaned next state, temporaries of dead writers.
void settle_checkpoint_folder(const LoadedCheckpoint& checkpoint);

/// A run folder belongs to one process while it writes there: an advisory lock (flock) on
/// dir/.normnet.lock, held for the life of this object, the file holding the holder's pid and
/// command for the message of a second writer. The kernel releases a flock when its process
/// ends, however it ends, so a lock file a killed run left behind is no lock: the next writer
/// takes it over. The lock file is removed on release (after checking that the name is still
/// this lock's, as a taker checks that the file it locked is still the one of that name).
class FolderLock {
public:
    /// Locks `dir` (which must exist); throws normnet::Error naming `option`, the folder and the
    /// holding process when another process holds it.
    FolderLock(const std::string& dir, const std::string& option);
    ~FolderLock();
    FolderLock(const FolderLock&) = delete;
    FolderLock& operator=(const FolderLock&) = delete;

private:
    std::string path_;
    int fd_ = -1;
};

/// Makes `dir` ready for a command's outputs (`option` names it in errors, e.g. "--out"): creates
/// it, locks it for this process (`lock`, see FolderLock), removes stale temporaries, and refuses when it already holds any of `results` unless
/// `overwrite` is set or `continuing` (a resumed run in its own folder). Unless continuing, the
/// old `outputs` are then removed, in order (overwritten, or leftovers of a run that produced no
/// result). `alternative` completes the refusal's advice (e.g. "--resume DIR to continue it").
void prepare_output_folder(const std::string& dir, const std::string& option, const std::vector<std::string>& results,
                           const std::vector<std::string>& outputs, bool overwrite, bool continuing,
                           std::unique_ptr<FolderLock>& lock, const std::string& alternative = "");

/// The files a training run writes, in the order an overwrite removes them (the model first, so
/// an interrupted overwrite never leaves a model beside a foreign state).
const std::vector<std::string>& run_files();
/// Those of them that hold results: the model file, a checkpoint's commit point. (Without it, a
/// config.json, a metrics.csv or a training state is what a run that never committed a checkpoint
/// leaves; nothing is lost by replacing them.)
const std::vector<std::string>& checkpoint_files();

/// A new folder name `prefix` + the local date and time ("runs/2026-12-01_12-00-00"), with "_2",
/// "_3", ... appended when it exists already.
std::string new_run_dir(const std::string& prefix);

/// True when both paths name the same existing folder ("" is the working folder).
bool same_folder(const std::string& a, const std::string& b);

/// A run that fails before its first checkpoint leaves nothing: its config.json and header-only
/// metrics.csv go, and so does the folder (with `lock`, released first) if the run made it
/// (`existed` false) and it is empty.
void discard_run_folder(const std::string& dir, bool existed, std::unique_ptr<FolderLock>& lock);

}  // namespace normnet::cli
