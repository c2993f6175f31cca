"""Which of MXNet 1.9.1's unit tests are out of scope for straightdope, and why.

The scope rule (issue 32): no GPU, sparse storage, multi-device/kvstore, the legacy
Module/io/RecordIO APIs, downloads, float16/multi-precision, DLPack/TVM; and tests that MXNet
1.9.1 itself skips or fails on CPU. Every other test in a file that ``scripts/mxnet_tests.py``
runs is in scope. Each entry names what put it out (the first matching pattern of
``SCOPE_PATTERNS`` in the runner, checked by reading the test). Read as in scope on purpose,
though a pattern matches: test_numpy_op's ``test_np_unary_funcs`` (``has_tvm_ops()`` only
picks a kernel), test_numpy_ndarray's ``test_formatting`` (``gpu(0)`` is in a comment) and
test_gluon_utils' ``test_download_successful`` (its helper's ``download(`` is mocked). A
pattern in a module-level helper the test calls counts as in the test (since 6 Dec 2026: the
eight RNN tests of test_operator bind ``mx.mod.Module`` in ``check_rnn_consistency``).
A test that loops over dtypes including float16 stays in scope: float16 arrays exist here.
"""

OUT_OF_SCOPE = {
    'test_ndarray': {
        'test_dlpack': 'DLPack/TVM: dlpack',
        'test_load_saved_gpu_array_when_no_gpus_are_present': 'GPU: def test_load_saved_gpu_array_when_no_gpu',
    },
    'test_symbol': {
    },
    'test_autograd': {
        'test_unary_func': "sparse storage: 'row_sparse'",
        'test_binary_func': "sparse storage: 'row_sparse'",
        'test_attach_grad': 'sparse storage: tostype(',
        'test_grad_with_stype': 'sparse storage: def test_grad_with_stype',
        'test_sparse_dot_grad': 'sparse storage: def test_sparse',
    },
    'test_gluon': {
        'test_parameter': 'multi-device/kvstore: cpu(1)',
        'test_invalid_parameter_stype': 'sparse storage: def test_invalid_parameter_stype',
        'test_invalid_parameter_grad_stype': 'sparse storage: def test_invalid_parameter_grad_stype',
        'test_sparse_parameter': 'sparse storage: def test_sparse',
        'test_parameter_invalid_access': "sparse storage: 'row_sparse'",
        'test_parameter_dict': "sparse storage: 'row_sparse'",
        'test_parameter_row_sparse_data': 'sparse storage: def test_parameter_row_sparse',
        'test_symbol_block': 'downloads: pretrained=True',
        'test_sparse_symbol_block': 'sparse storage: def test_sparse',
        'test_sparse_hybrid_block': 'sparse storage: def test_sparse',
        'test_hybrid_block_hybrid_no_hybrid': 'multi-device/kvstore: cpu(1)',
        'test_sync_batchnorm': 'GPU: mx.gpu(',
        'test_global_norm_clip': "sparse storage: 'row_sparse'",
        'test_export': 'legacy Module/io/RecordIO: mx.mod.',
        'test_import': 'downloads: pretrained=True',
        'test_save_load': 'downloads: pretrained=True',
        'test_hybrid_multi_context': 'multi-device/kvstore: cpu(1)',
        'test_sparse_hybrid_block_grad': 'sparse storage: def test_sparse',
        'test_hybrid_static_memory_recording': 'downloads: pretrained=True',
        'test_hybrid_static_memory': 'downloads: pretrained=True (in check_hybrid_static_memory)',
        'test_hybrid_static_memory_switching': 'downloads: pretrained=True (in its check_ helper)',
        'test_deconv2d_16c': 'skipped in MXNet itself: @unittest.skip(',
        'test_batchnorm_16c': 'skipped in MXNet itself: @unittest.skip(',
        'test_reshape_conv_reshape_conv': 'skipped in MXNet itself: @unittest.skip(',
        'test_slice_conv_reshape_conv': 'skipped in MXNet itself: @unittest.skip(',
        'test_reshape_batchnorm': 'skipped in MXNet itself: @unittest.skip(',
        'test_slice_batchnorm_slice_batchnorm': 'skipped in MXNet itself: @unittest.skip(',
        'test_reshape_batchnorm_reshape_batchnorm': 'skipped in MXNet itself: @unittest.skip(',
        'test_reshape_batchnorm_slice_batchnorm': 'skipped in MXNet itself: @unittest.skip(',
        'test_reshape_pooling2d': 'skipped in MXNet itself: @unittest.skip(',
        'test_reshape_pooling2d_reshape_pooling2d': 'skipped in MXNet itself: @unittest.skip(',
        'test_slice_pooling2d_reshape_pooling2d': 'skipped in MXNet itself: @unittest.skip(',
        'test_reshape_pooling2d_slice_pooling2d': 'skipped in MXNet itself: @unittest.skip(',
        'test_reshape_deconv': 'skipped in MXNet itself: @unittest.skip(',
        'test_slice_deconv': 'skipped in MXNet itself: @unittest.skip(',
        'test_reshape_deconv_reshape_deconv': 'skipped in MXNet itself: @unittest.skip(',
        'test_slice_deconv_slice_deconv': 'skipped in MXNet itself: @unittest.skip(',
        'test_reshape_deconv_slice_deconv': 'skipped in MXNet itself: @unittest.skip(',
        'test_slice_deconv_reshape_deconv': 'skipped in MXNet itself: @unittest.skip(',
        'test_split_and_load': 'sparse storage: CSRNDArray',
        'test_embedding': 'sparse storage: sparse_grad=True (a row_sparse gradient\'s .data)',
    },
    'test_gluon_data': {
        'test_datasets': 'downloads: MNIST(',
        'test_dataloader_context': 'GPU: num_gpus()',
        'test_recordimage_dataset': 'downloads: download( (prepare_record), RecordIO',
        'test_recordimage_dataset_with_data_loader_multiworker': 'downloads: download( (prepare_record), RecordIO',
        'test_image_folder_dataset': 'downloads: download( (prepare_record)',
    },
    'test_loss': {
        'test_ce_loss': 'legacy Module/io/RecordIO: mx.io.',
        'test_bce_loss': 'legacy Module/io/RecordIO: mx.io.',
        'test_kl_loss': 'legacy Module/io/RecordIO: mx.io.',
        'test_l2_loss': 'legacy Module/io/RecordIO: mx.io.',
        'test_l1_loss': 'legacy Module/io/RecordIO: mx.io.',
        'test_ctc_loss_train': 'legacy Module/io/RecordIO: mx.io.',
        'test_sample_weight_loss': 'legacy Module/io/RecordIO: mx.io.',
        'test_saveload': 'legacy Module/io/RecordIO: mx.io.',
        'test_huber_loss': 'legacy Module/io/RecordIO: mx.io.',
        'test_hinge_loss': 'legacy Module/io/RecordIO: mx.io.',
        'test_squared_hinge_loss': 'legacy Module/io/RecordIO: mx.io.',
        'test_triplet_loss': 'legacy Module/io/RecordIO: mx.io.',
        'test_sdml_loss': 'legacy Module/io/RecordIO: mx.io.',
        'test_poisson_nllloss_mod': 'legacy Module/io/RecordIO: mx.io.',
        'test_bce_loss_with_pos_weight': 'legacy Module/io/RecordIO: mx.io.',
    },
    'test_metric': {
    },
    'test_optimizer': {
        'test_lr_wd_mult': 'legacy Module/io/RecordIO: mx.mod.',
        'test_sgd': "sparse storage: 'csr'",
        'test_sparse_sgd': 'sparse storage: def test_sparse',
        'test_std_sparse_sgd': 'sparse storage: def test_std_sparse',
        'test_sgld': "sparse storage: 'row_sparse'",
        'test_adam': "sparse storage: 'row_sparse'",
        'test_rms': "sparse storage: 'row_sparse'",
        'test_ftrl': "sparse storage: 'row_sparse'",
        'test_nadam': 'legacy Module/io/RecordIO: mx.io.',
        'test_adagrad': "sparse storage: 'row_sparse'",
    },
    'test_init': {
        'test_default_init': 'legacy Module/io/RecordIO: mx.mod.',
        'test_variable_init': 'legacy Module/io/RecordIO: mx.mod.',
        'test_aux_init': 'legacy Module/io/RecordIO: mx.mod.',
        'test_rsp_const_init': "sparse storage: 'csr'",
    },
    'test_gluon_trainer': {
        'test_multi_trainer': "sparse storage: 'row_sparse'",
        'test_trainer_with_sparse_grad_on_single_context': 'sparse storage: def test_trainer_with_sparse',
        'test_trainer_with_teststore': 'multi-device/kvstore: cpu(1)',
        'test_trainer': 'multi-device/kvstore: cpu(1)',
        'test_trainer_save_load': 'multi-device/kvstore: kvstore',
        'test_trainer_sparse_save_load': 'sparse storage: def test_trainer_sparse',
        'test_trainer_multi_layer_init': "sparse storage: 'row_sparse'",
        'test_trainer_reset_kv': 'multi-device/kvstore: cpu(1)',
        'test_trainer_sparse_kv': 'sparse storage: def test_trainer_sparse',
        'test_trainer_lr_sched': 'multi-device/kvstore: cpu(1)',
    },
    'test_numpy_op': {
            },
    'test_operator': {
        'test_regression': "sparse storage: 'csr'",
        'test_batchnorm_training': 'sparse storage: tostype(',
        'test_batchnorm': 'multi-device/kvstore: SyncBatchNorm',
        'test_depthwise_convolution': 'skipped in MXNet itself: @unittest.skip(',
        'test_stn': 'GPU: mx.gpu(',
        'test_sequence_last': 'skipped in MXNet itself: @unittest.skip(',
        'test_cast_float32_to_float16': 'float16/multi-precision: def test_cast_float32_to_float16',
        'test_amp_multicast': 'float16/multi-precision: def test_amp_',
        'test_custom_op': 'sparse storage: sparse.',
        'test_custom_op_fork': 'skipped in MXNet itself: @unittest.skip(',
        'test_deformable_convolution': 'GPU: mx.gpu(',
        'test_deformable_psroipooling': 'GPU: mx.gpu(',
        'test_laop_6': 'skipped in MXNet itself: @unittest.skip(',
        'test_scatter_gather_nd': 'skipped in MXNet itself: @unittest.skip(',
        'test_float16_min_max': 'float16/multi-precision: def test_float16',
        'test_monitor_with_variable_input_shape': 'legacy Module/io/RecordIO: mx.module',
        'test_activation': 'skipped in MXNet itself: @unittest.skip(',
        'test_context_num_gpus': 'GPU: def test_context_num_gpu',
        'test_lstm_sym': 'legacy Module/io/RecordIO: mx.mod. (in check_rnn_consistency)',
        'test_lstm_bidirectional': 'legacy Module/io/RecordIO: mx.mod. (in check_rnn_consistency)',
        'test_gru_sym': 'legacy Module/io/RecordIO: mx.mod. (in check_rnn_consistency)',
        'test_gru_bidirectional': 'legacy Module/io/RecordIO: mx.mod. (in check_rnn_consistency)',
        'test_rnntanh_sym': 'legacy Module/io/RecordIO: mx.mod. (in check_rnn_consistency)',
        'test_rnntanh_bidirectional': 'legacy Module/io/RecordIO: mx.mod. (in check_rnn_consistency)',
        'test_rnnrelu_sym': 'legacy Module/io/RecordIO: mx.mod. (in check_rnn_consistency)',
        'test_rnnrelu_bidirectional': 'legacy Module/io/RecordIO: mx.mod. (in check_rnn_consistency)',
    },
    'test_higher_order_grad': {
    },
    'test_contrib_autograd': {
    },
    'test_random': {
        'test_random_seed_setting_for_context': 'GPU: num_gpus()',
        'test_parallel_random_seed_setting_for_context': 'GPU: num_gpus()',
    },
    'test_numpy_gluon': {
    },
    'test_numpy_ndarray': {
            },
    'test_attr': {
    },
    'test_viz': {
    },
    'test_dynamic_shape': {
    },
    'test_thread_local': {
        'test_context': 'GPU: mx.gpu(',
    },
    'test_gluon_utils': {
        'test_download_retries': 'downloads: download(',
        'test_download_ssl_verify': 'downloads: download(',
    },
    'test_infer_shape': {
    },
    'test_infer_type': {
    },
    'test_executor': {
    },
    'test_gluon_rnn': {
        'test_lstm_forget_bias': 'legacy Module/io/RecordIO: mx.mod.',
        'test_rnn_layers_fp16': 'GPU: num_gpus()',
        'test_rnn_unroll_variant_length': 'legacy Module/io/RecordIO: mx.mod.',
    },
    'test_contrib_control_flow': {
    },
    'test_exc_handling': {
    },
    'test_engine': {
        'test_engine_openmp_after_fork': 'skipped in MXNet itself: @unittest.skip(',
    },
    'test_gluon_save': {
    },
}
